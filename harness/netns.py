"""A network namespace with only loopback for runs whose brokers bind all interfaces (Apache RocketMQ 4.9.x binds
0.0.0.0): the command re-executes itself under `unshare --net`, brings `lo` up, and from then on every process of the
run (brokers, the load, Spark) lives in that namespace, so no test traffic can leave 127.0.0.0/8. The namespace has
no name and no mount: it disappears with the run's last process, so nothing is left to clean up.

Processes outside cannot reach its brokers' ports; `rmq-chaos fault` and `rmq-chaos cluster status` join the
namespace of the process that holds the cluster (`join_netns_of`), as they join a compose run's (whose namespace
belongs to a holder container, harness/backends/compose/netns.py). Unix sockets (the HA relay's control) and files
(state, journal) work as usual."""
from __future__ import annotations

import os
import shutil
import sys

MARK_ENV = "RMQ_CHAOS_NETNS"
JOIN_ENV = "RMQ_CHAOS_NETNS_JOINED"
BOOT = 'ip link set lo up && exec "$@"'


class NetnsError(RuntimeError):
    pass


def inside() -> bool:
    """True in a process started by `isolated_argv` (or its children)."""
    return os.environ.get(MARK_ENV) == "1"


def isolated_argv(argv: list[str]) -> list[str]:
    """`argv` run in a new network namespace with loopback up."""
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            raise NetnsError(f"{tool} is missing (util-linux / iproute2); it is needed to isolate Apache brokers")
    return ["unshare", "--net", "--", "/bin/sh", "-c", BOOT, "sh", *argv]


def reexec_isolated() -> None:
    """Replace this process by the same command inside a new network namespace (does not return)."""
    argv = isolated_argv([sys.executable, "-m", "harness.cli", *sys.argv[1:]])
    os.environ[MARK_ENV] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvp(argv[0], argv)


def netns_inode(pid: int | str = "self") -> int | None:
    """The network namespace of a process, as its inode (None: the process is gone or not readable)."""
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def join_netns_of(pid: int) -> None:
    """Replace this process by the same command inside the network namespace of process `pid` (the one that holds a
    cluster) when that is not this process's own; returns when it is, when `pid` is gone, or after one join."""
    if os.environ.get(JOIN_ENV) == "1" or shutil.which("nsenter") is None:
        return
    theirs = netns_inode(pid)
    if theirs is None or theirs == netns_inode():
        return
    os.environ[JOIN_ENV] = "1"
    argv = ["nsenter", f"--net=/proc/{pid}/ns/net", "--", sys.executable, "-m", "harness.cli", *sys.argv[1:]]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvp(argv[0], argv)
