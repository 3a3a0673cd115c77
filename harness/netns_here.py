"""This process into a network namespace of its own with only loopback up, without re-executing it: what
`harness.netns` does for the CLI (`unshare --net` and a re-exec), for a process that cannot be re-executed (a pytest
session standing an Apache RocketMQ cluster up, whose 4.9.x brokers bind 0.0.0.0). `unshare(CLONE_NEWNET)` moves
the calling thread; the processes and threads it starts afterwards follow it. Like `harness.netns`, the namespace
has no name and no mount and disappears with its last process."""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess

from harness import netns

CLONE_NEWNET = 0x40000000


def isolate_this_process() -> None:
    """Move this (main) thread into a new network namespace with `lo` up, once; later calls do nothing."""
    if netns.inside():
        return
    if shutil.which("ip") is None:
        raise netns.NetnsError("ip is missing (iproute2); it is needed to isolate Apache brokers")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise netns.NetnsError(f"unshare(CLONE_NEWNET): {os.strerror(err)} (root is needed)")
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    os.environ[netns.MARK_ENV] = "1"
