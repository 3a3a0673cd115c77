"""Running system tools (mount, losetup, e2fsck, fsfreeze, mkswap, ...) with one-line errors, and root checks."""
from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

from faults.errors import FaultUnavailable, ToolError

TOOL_TIMEOUT_S = 120.0


def require_root(what: str) -> None:
    """Raise `FaultUnavailable` unless this process runs as root."""
    if os.geteuid() != 0:
        raise FaultUnavailable(f"{what} needs root (running as uid {os.geteuid()}); run it with sudo")


def have_tool(name: str) -> bool:
    return shutil.which(name) is not None or any(
        os.access(os.path.join(d, name), os.X_OK) for d in ("/usr/sbin", "/sbin"))


def tool_path(name: str) -> str:
    """Absolute path of a tool, also looking in /usr/sbin and /sbin (often not on a user's PATH)."""
    found = shutil.which(name)
    if found:
        return found
    for d in ("/usr/sbin", "/sbin"):
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    raise FaultUnavailable(f"tool {name!r} not found (Debian package: util-linux / e2fsprogs / mount); run ./setup.sh")


def run_tool(argv: Sequence[str], *, ok_codes: Sequence[int] = (0,), timeout_s: float = TOOL_TIMEOUT_S,
             input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run a tool; raise `ToolError` naming the command and its stderr's first line when it exits otherwise."""
    cmd = [tool_path(argv[0]), *argv[1:]]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, input=input_text)
    except subprocess.TimeoutExpired as e:
        raise ToolError(f"{' '.join(argv)}: no answer within {timeout_s:.0f} s") from e
    if proc.returncode not in ok_codes:
        msg = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
        raise ToolError(f"{' '.join(argv)}: exit {proc.returncode}: {msg}")
    return proc
