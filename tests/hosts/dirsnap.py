"""What a directory tree is, byte for byte: `snapshot(root)` maps every path under `root` (itself included, symlinks
not followed) to its type, mode, owner, size, modification time and contents (a file's bytes, a symlink's target),
so two snapshots are equal only when nothing in the tree was made, removed, re-moded, written or touched.
`a_tree(root)` makes a small tree of someone else's: files of several modes, a subdirectory, a symlink."""
from __future__ import annotations

import os
import stat
from pathlib import Path


def snapshot(root: Path) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    paths = [root]
    while paths:
        p = paths.pop()
        st = os.lstat(p)
        if stat.S_ISDIR(st.st_mode):
            paths += sorted(p.iterdir())
            body: bytes | str = b""
        elif stat.S_ISLNK(st.st_mode):
            body = os.readlink(p)
        else:
            body = p.read_bytes()
        out[str(p.relative_to(root))] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid,
                                         st.st_size, st.st_mtime_ns, body)
    return out


def a_tree(root: Path, mode: int = 0o755) -> Path:
    """A directory of someone else's at `root` (mode `mode`), with files, a subdirectory and a symlink."""
    root.mkdir(parents=True)
    (root / "notes.txt").write_text("mine, not the harness's\n")
    (root / "secret").write_bytes(b"\x00\x01 keep me")
    (root / "secret").chmod(0o600)
    (root / "sub").mkdir()
    (root / "sub" / "data.bin").write_bytes(os.urandom(256))
    (root / "sub" / "data.bin").chmod(0o640)
    (root / "link").symlink_to("notes.txt")
    root.chmod(mode)
    return root
