"""The memory hog of `memory_pressure`: `python -m faults.hog --bytes N [--cgroup DIR]...` joins the cgroups, maps N
bytes of private anonymous memory, touches every page, says `ready`, then keeps touching them (so they stay hot and
the node's colder pages are the ones the kernel swaps out) until it is killed."""
from __future__ import annotations

import argparse
import mmap
import os
import sys
import time

PAGE = mmap.PAGESIZE
TOUCH_INTERVAL_S = 1.0


def touch(m: mmap.mmap, size: int) -> None:
    for off in range(0, size, PAGE):
        m[off] = (m[off] + 1) & 0xFF


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m faults.hog", description=__doc__)
    parser.add_argument("--bytes", type=int, required=True)
    parser.add_argument("--cgroup", action="append", default=[])
    args = parser.parse_args(argv)
    for cg in args.cgroup:
        with open(os.path.join(cg, "cgroup.procs"), "w", encoding="ascii") as f:
            f.write(str(os.getpid()))
    size = max(PAGE, args.bytes // PAGE * PAGE)
    m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    touch(m, size)
    print("ready", flush=True)
    while True:
        time.sleep(TOUCH_INTERVAL_S)
        touch(m, size)


if __name__ == "__main__":
    sys.exit(main())
