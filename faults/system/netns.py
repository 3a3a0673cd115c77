"""Network namespaces by identity: the inode of `/proc/self/ns/net`. Network faults record the namespace they changed
(a host's own, or a test host's), so that an undo replayed from another namespace acts in that one (through
`nsenter --net=<path>`) or finds it gone, and never touches the namespace it happens to run in by mistake."""
from __future__ import annotations

import os

from faults.system.tools import tool_path

SELF = "/proc/self/ns/net"
NAMED_DIRS = ("/run/netns", "/var/run/netns")
"""Where `ip netns add` bind-mounts the namespaces it names."""


def current() -> int:
    """The inode of this process's network namespace."""
    return os.stat(SELF).st_ino


def _inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def find(inode: int) -> str | None:
    """A path that holds network namespace `inode` (a named one, or a process's), or None when it is gone."""
    if inode == current():
        return SELF
    for d in NAMED_DIRS:
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if _inode(os.path.join(d, name)) == inode:
                return os.path.join(d, name)
    for pid in os.listdir("/proc"):
        if pid.isdigit() and _inode(f"/proc/{pid}/ns/net") == inode:
            return f"/proc/{pid}/ns/net"
    return None


def argv_in(inode: int | None, argv: list[str]) -> list[str] | None:
    """`argv` to run in namespace `inode` (None: this one): as is here, through nsenter elsewhere; None when that
    namespace no longer exists (and every rule and qdisc in it went with it)."""
    if inode is None or inode == current():
        return argv
    path = find(inode)
    if path is None:
        return None
    return [tool_path("nsenter"), f"--net={path}", "--", *argv]


def label(inode: int | None) -> str:
    return f"net:[{inode if inode is not None else current()}]"
