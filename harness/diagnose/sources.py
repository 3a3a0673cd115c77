"""The files `rmq-chaos diagnose` reads: paths walked into regular files, each streamed in blocks of whole lines.

A path may be a file or a directory (walked recursively, in name order, symlinks not followed); a `.gz` file is
decompressed as it is read. Nothing is read whole: a file comes as blocks of about BLOCK_BYTES that end at a line
end (the partial last line carried to the next block), so a 1 GiB log costs one block of memory. What cannot be read
is not an error of the run: it becomes one `Skipped` line naming the file and why (binary, unreadable, truncated gzip,
not a regular file), and the rest is still diagnosed.
"""
from __future__ import annotations

import gzip
import os
import stat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BLOCK_BYTES = 8 * 1024 * 1024
SNIFF_BYTES = 8192
MAX_LINE_BYTES = 4 * BLOCK_BYTES
ALLOWED = "text logs (broker, store, client, application), jstack dumps, broker.conf; plain or .gz"


@dataclass(frozen=True)
class Skipped:
    """A file (or path) not read, or not read to its end, and why."""

    path: str
    reason: str

    def line(self) -> str:
        return f"diagnose: {self.path}: skipped: {self.reason}; allowed: {ALLOWED}"


class SkipFile(Exception):
    """Raised inside a read: the file is given up from here on (what was read before still counts)."""


def walk(paths: list[str], skipped: list[Skipped]) -> Iterator[Path]:
    """Every regular file under `paths` (a file itself, or a directory walked in name order)."""
    for raw in paths:
        path = Path(raw)
        try:
            info = path.lstat()
        except OSError as err:
            skipped.append(Skipped(raw, f"cannot be read ({err.strerror or err})"))
            continue
        if stat.S_ISDIR(info.st_mode):
            yield from _walk_dir(path, skipped)
        elif stat.S_ISREG(info.st_mode):
            yield path
        else:
            skipped.append(Skipped(raw, "not a regular file or directory"))


def _walk_dir(top: Path, skipped: list[Skipped]) -> Iterator[Path]:
    def on_error(err: OSError) -> None:
        skipped.append(Skipped(str(err.filename or top), f"cannot be read ({err.strerror or err})"))

    for root, dirs, files in os.walk(top, onerror=on_error):
        dirs.sort()
        for name in sorted(files):
            path = Path(root, name)
            try:
                mode = path.lstat().st_mode
            except OSError as err:
                skipped.append(Skipped(str(path), f"cannot be read ({err.strerror or err})"))
                continue
            if stat.S_ISREG(mode):
                yield path
            elif not stat.S_ISLNK(mode):
                skipped.append(Skipped(str(path), "not a regular file"))


def blocks(path: Path) -> Iterator[bytes]:
    """The file's bytes (decompressed for `.gz`) as blocks that end at a line end; raises SkipFile (binary,
    unreadable, truncated or corrupt gzip) at the point where reading stops."""
    try:
        raw = gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")  # noqa: SIM115
    except OSError as err:
        raise SkipFile(f"cannot be read ({err.strerror or err})") from None
    with raw:
        carry = b""
        first = True
        while True:
            try:
                chunk = raw.read(BLOCK_BYTES)
            except (EOFError, gzip.BadGzipFile, zlib.error) as err:
                raise SkipFile(f"truncated or corrupt gzip ({err}); the part before it was read") from None
            except OSError as err:
                raise SkipFile(f"cannot be read ({err.strerror or err})") from None
            if first:
                first = False
                if b"\0" in chunk[:SNIFF_BYTES]:
                    raise SkipFile("binary file (NUL bytes in its first 8 KiB)")
            if not chunk:
                if carry:
                    yield carry
                return
            data = carry + chunk
            end = data.rfind(b"\n") + 1
            if end == 0:
                carry = b"" if len(data) >= MAX_LINE_BYTES else data
                if not carry:
                    yield data  # a line longer than MAX_LINE_BYTES is cut, never held whole
                continue
            carry = data[end:]
            yield data[:end]
