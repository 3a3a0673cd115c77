"""What a host must have for a node of rmq-chaos, checked before anything is started anywhere. Standard library only:
the control node runs this file's source with the host's own Python over SSH (`python3 - ARGS < checks.py`) before
the harness is put on the host, and the agent imports it for `hello`.

`host_checks(rocketmq_home, version)` -> {"python", "machine", "root", "problems": [one line each]}: root (loop
mounts, cgroups), the loop devices and ext4 tools of a store, the cgroup v1 controllers of a node (memory, blkio,
freezer, cpu), and for an Apache program the distribution at `rocketmq_home` (its bin/mqbroker, the jar of
`version`) and a `java`."""
from __future__ import annotations

import json
import os
import platform
import re
import shutil
import sys

CONTROLLERS = ("memory", "blkio", "freezer", "cpu")
STORE_TOOLS = ("losetup", "mkfs.ext4", "mount", "umount", "e2fsck")


def _cgroup_controllers() -> set[str]:
    found: set[str] = set()
    try:
        with open("/proc/self/mounts", encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 3 and parts[2] == "cgroup":
                    found |= set(parts[3].split(","))
                elif len(parts) > 2 and parts[2] == "cgroup2":
                    try:
                        with open(os.path.join(parts[1], "cgroup.controllers"), encoding="utf-8") as c:
                            found |= {"blkio" if x == "io" else x for x in c.read().split()} | {"freezer"}
                    except OSError:
                        pass
    except OSError:
        pass
    return found


def host_checks(rocketmq_home: str | None = None, version: str | None = None) -> dict:
    problems = []
    root = os.geteuid() == 0
    if not root:
        problems.append("not root (a node's store is a loop mount and its cgroups need root): set ansible_become "
                        "or ansible_user root")
    if not os.path.exists("/dev/loop-control"):
        problems.append("no loop devices (/dev/loop-control is missing): a broker's store is a loop-mounted ext4")
    missing = [t for t in STORE_TOOLS if shutil.which(t) is None]
    if missing:
        problems.append(f"missing {', '.join(missing)} (e2fsprogs, util-linux, mount): a broker's store needs them")
    lacking = [c for c in CONTROLLERS if c not in _cgroup_controllers()]
    if lacking:
        problems.append(f"no cgroup controller {', '.join(lacking)} mounted: a node's cgroups need "
                        f"{', '.join(CONTROLLERS)}")
    if rocketmq_home is not None:
        mqbroker = os.path.join(rocketmq_home, "bin", "mqbroker")
        if not os.access(mqbroker, os.X_OK):
            problems.append(f"no Apache RocketMQ distribution at {rocketmq_home} (bin/mqbroker missing or not "
                            "executable): set rmq_chaos_rocketmq_home to one")
        elif version is not None:
            jars = os.listdir(os.path.join(rocketmq_home, "lib")) if os.path.isdir(
                os.path.join(rocketmq_home, "lib")) else []
            found = sorted({m.group(1) for j in jars if (m := re.match(r"^rocketmq-broker-(\d+\.\d+\.\d+)\.jar$", j))})
            if found != [version]:
                problems.append(f"the distribution at {rocketmq_home} is RocketMQ {', '.join(found) or 'unknown'}, "
                                f"not {version}")
        if shutil.which("java") is None:
            problems.append("no java on PATH: an Apache RocketMQ broker needs one")
    return {"python": f"{sys.version_info[0]}.{sys.version_info[1]}", "machine": platform.machine(), "root": root,
            "problems": problems}


if __name__ == "__main__":
    home = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "-" else None
    ver = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] != "-" else None
    print(json.dumps(host_checks(home, ver)))
