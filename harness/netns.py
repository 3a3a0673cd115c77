"""A network namespace with only loopback for runs whose brokers bind all interfaces (Apache RocketMQ 4.9.x binds
0.0.0.0): the command re-executes itself under `unshare --net`, brings `lo` up, and from then on every process of the
run (brokers, the load, Spark) lives in that namespace, so no test traffic can leave 127.0.0.0/8. The namespace has
no name and no mount: it disappears with the run's last process, so nothing is left to clean up.

Limitation: processes outside (e.g. `rmq-chaos cluster status` from another shell) cannot reach its brokers' ports;
unix sockets (the HA relay's control) and files (state, journal) work as usual."""
from __future__ import annotations

import os
import shutil
import sys

MARK_ENV = "RMQ_CHAOS_NETNS"
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
