"""A harness process for the crash tests and the soak benchmark: makes nodes (journaled as its own), applies faults,
and SIGKILLs itself at a chosen point (or waits to be killed from outside after printing APPLIED).

    python tests/faults/crash_harness.py --state DIR --base DIR --run-id ID --fault slave:readonly_fs \
        [--fault master:memory_pressure:{"limit_fraction":0.5}] --crash-at after_apply|after_intent|after_inject|
        after_verify|mid_revert|external
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2]), str(Path(__file__).resolve().parent)]

from fault_nodes import make_node  # noqa: E402

from faults import base, undo  # noqa: E402
from faults.journal import Journal  # noqa: E402
from faults.registry import FAULTS  # noqa: E402
from harness.resources import RelayProcess  # noqa: E402

POINTS = ("after_intent", "after_inject", "after_apply", "after_verify", "mid_revert", "external")


def die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def arm(point: str) -> None:
    """Patch the fault machinery so this process kills itself at `point`."""
    if point == "after_intent":
        orig_begin = Journal.begin

        def begin(self, kind, **kw):
            eid = orig_begin(self, kind, **kw)
            if kind.startswith("fault:"):
                die()
            return eid
        Journal.begin = begin
    elif point == "after_inject":
        for cls in FAULTS.values():
            orig = cls.inject

            def inject(self, _orig=orig):
                out = _orig(self)
                die()
                return out
            cls.inject = inject
    elif point == "mid_revert":
        orig_run = undo.run_ops

        def run_ops(ops, ctx=None):
            if ops:  # the first revert: do its first undo operation, then die
                orig_run(ops[:1], ctx)
                die()
            return orig_run(ops, ctx)
        base.run_ops = run_ops


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--state", required=True)
    parser.add_argument("--base", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--fault", action="append", default=[], help="node:kind[:params-json]")
    parser.add_argument("--crash-at", choices=POINTS, default="external")
    args = parser.parse_args()
    journal = Journal(args.state)
    base_dir = Path(args.base)
    specs = []
    for spec in args.fault:
        node, kind, *rest = spec.split(":", 2)
        specs.append((node, kind, json.loads(rest[0]) if rest else {}))
    nodes = {}
    for name in dict.fromkeys(n for n, _, _ in specs):
        extras = {}
        if any(n == name and k == "ha_link" for n, k, _ in specs):
            relay = RelayProcess.start(journal, "127.0.0.1:9", str(base_dir / f"{name}-relay.sock"),
                                       run_id=args.run_id)
            extras = relay.extras()
        nodes[name] = make_node(journal, base_dir, args.run_id, name, extras=extras)
    print("NODES", flush=True)
    arm(args.crash_at)
    applied = []
    for name, kind, params in specs:
        fault = FAULTS[kind](nodes[name].target, params, journal=journal)
        t0 = time.monotonic()
        fault.apply()
        applied.append(fault)
        if args.crash_at == "after_apply":
            die()
        fault.verify()
        print(f"TIMING {kind} {time.monotonic() - t0:.4f}", flush=True)
        if args.crash_at == "after_verify":
            die()
    print("APPLIED", flush=True)
    if args.crash_at == "mid_revert":
        for fault in applied:
            fault.revert()
    while True:
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
