"""Speed of the compose backend on this machine: a compose cluster (the test image, or --image) from `up` to ready
(route, probe SEND_OK, slave caught up) and `down`, next to the local backend's; then every fault on a container
node, `--repeats` times: apply -> verified effect, and revert (including, for readonly_fs, the container stopped,
e2fsck, mounted and started until the slave caught up). Needs a Docker engine and the image
(compose/image/build-emulator-image.sh 4.9.1).

    sudo .venv/bin/python benchmarks/compose_cluster.py [--repeats 3] [--image rmq-chaos/rocketmq-emulator:4.9.1]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from faults.cleanup import cleanup  # noqa: E402
from faults.journal import Journal  # noqa: E402
from faults.registry import fault_class  # noqa: E402
from harness.backends.factory import make_backend, with_backend  # noqa: E402
from harness.rundir import RunDir  # noqa: E402
from harness.scenario import load_scenario_text  # noqa: E402

SCENARIO = """\
name: bench-compose
cluster:
  version: "4.9.1"
  store_size: 256MiB
  ha_relay: always
  broker:
    common: {mappedFileSizeCommitLog: 4194304}
phases: [{name: idle, duration: 1s}]
"""
FAULTS = [
    ("freeze", "slave", {}),
    ("kill", "slave", {}),
    ("restart", "master", {}),
    ("memory_pressure", "master", {"limit_bytes": 64 << 20, "hog_bytes": 96 << 20}),
    ("disk_throttle", "master", {"write_bps": 4 << 20}),
    ("disk_freeze", "slave", {}),
    ("readonly_fs", "slave", {}),
    ("ha_link", "slave", {"mode": "cut"}),
]


def stand_up(backend_name: str, image: str | None, base: Path, console: Console) -> tuple[object, float]:
    scenario = load_scenario_text("bench.yaml", SCENARIO)[0]
    scenario = with_backend(scenario, backend_name, image if backend_name == "compose" else None)
    state = base / "state"
    rd = RunDir.create(base / "runs", scenario)
    backend = make_backend(scenario, rd, Journal(state), state)
    t0 = time.monotonic()
    backend.up(lambda text: console.print(f"  {text}"))
    return backend, time.monotonic() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--image", default="rmq-chaos/rocketmq-emulator:4.9.1")
    args = parser.parse_args()
    console = Console()
    ups = Table(title="cluster up -> ready, down (s)")
    for col in ("backend", "up -> ready", "down"):
        ups.add_column(col)
    timings: dict[str, dict[str, list[float]]] = {}
    for backend_name in ("local", "compose"):
        with tempfile.TemporaryDirectory(prefix="rmq-bench-", dir="/tmp") as tmp:
            base = Path(tmp)
            backend, up_s = stand_up(backend_name, args.image, base, console)
            try:
                if backend_name == "compose":
                    journal = Journal(base / "state")
                    for kind, node, params in FAULTS:
                        for _ in range(args.repeats):
                            fault = fault_class(kind)(backend.targets[node], params, journal=journal)
                            t0 = time.monotonic()
                            fault.apply()
                            fault.verify()
                            t1 = time.monotonic()
                            if not fault.ONE_SHOT:
                                fault.revert()
                            t2 = time.monotonic()
                            row = timings.setdefault(f"{kind} ({node})", {"apply": [], "revert": []})
                            row["apply"].append(t1 - t0)
                            row["revert"].append(t2 - t1)
            finally:
                t0 = time.monotonic()
                backend.down()
                down_s = time.monotonic() - t0
                cleanup(base / "state")
            ups.add_row(backend_name, f"{up_s:.1f}", f"{down_s:.1f}")
    console.print(ups)
    table = Table(title=f"faults on compose nodes, {args.repeats} repeats (s, median / max)")
    for col in ("fault", "apply -> verified", "revert"):
        table.add_column(col)
    for name, row in timings.items():
        table.add_row(name, *(f"{statistics.median(v):.3f} / {max(v):.3f}" for v in (row["apply"], row["revert"])))
    console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
