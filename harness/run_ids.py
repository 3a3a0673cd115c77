"""Run ids unique on this machine, not only in one `runs/` directory: cgroups (`<controller>/rmq-chaos/<run-id>/`),
compose projects and journals are named by the run id, so two runs of one scenario started in the same second
(two `rmq-chaos run` in parallel, a test suite on several workers) must not share one.

A name is claimed by binding an abstract Unix socket named after it: atomic, held until the run ends or its
process does (nothing to clean up after a crash). A name whose cgroups are still on the machine (a killed
run not yet cleaned up) is never handed out either."""
from __future__ import annotations

import hashlib
import socket

from faults.system import cgroupfs
from harness.resources.cgroups import DEFAULT_CONTROLLERS

_held: dict[str, socket.socket] = {}


def claim(name: str) -> bool:
    """True when `name` is now held by the caller; False when a live run (of this process or another) holds it."""
    if name in _held or _cgroups_exist(name):
        return False
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    digest = hashlib.sha1(name.encode("utf-8")).hexdigest()
    try:
        sock.bind(f"\0rmq-chaos-run-id/{digest}")
    except OSError:
        sock.close()
        return False
    _held[name] = sock
    return True


def release(name: str) -> None:
    """Give a name back (the process ending does the same)."""
    sock = _held.pop(name, None)
    if sock is not None:
        sock.close()


def _cgroups_exist(name: str) -> bool:
    return bool(cgroupfs.run_dirs(name, DEFAULT_CONTROLLERS))
