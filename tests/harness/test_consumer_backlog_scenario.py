"""The ready field-incident scenario of issue 12, `scenarios/consumer-backlog-stuck-thread.yaml`, as a user runs it
(`rmq-chaos run`, emulator, then the Spark analysis): every expectation holds (exit 0). Two groups consume one
topic; in the `stuck` phase a share of one group's messages block its consume threads: its lag grows and its
committed offset stops while the other group keeps up, and after the drain both groups got every acknowledged
send. The figures of the same file on the real 4.9.1 are in docs/scenarios.md.

One bound is the machine's, not the broker's: `broker-writes-fast` (the master's [PAGECACHERT] p99 bucket in the
`stuck` phase, max 50 ms) measured 100 ms in a CI run while other tests loaded the 2 cores (the emulator's
SYNC_FLUSH put is Python sharing them). The test runs the file with that bound at 1000 ms, which a busy machine
meets and a broker whose writes stall (seconds, as in transient-store-pool) does not; the metric must still be
measured."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from runsupport import events, rows, valid_run

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "consumer-backlog-stuck-thread.yaml"
BUSY_MACHINE_PUT_P99_MS = 1000


def _busy_machine_copy(tmp_path: Path) -> Path:
    data = yaml.safe_load(SCENARIO.read_text())
    for e in data["expect"]:
        if e["name"] == "broker-writes-fast":
            e["max"] = BUSY_MACHINE_PUT_P99_MS
    path = tmp_path / SCENARIO.name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.long
def test_backlog_scenario_is_valid_on_the_emulator(tmp_path: Path) -> None:
    with valid_run(_busy_machine_copy(tmp_path), tmp_path) as (run_dir, verdict):
        measured = {r["name"]: r["measured"] for r in verdict["expectations"]}
        assert measured["broker-writes-fast"] is not None
        assert measured["stuck-lag-grows"] > 10 * max(1, measured["healthy-lag-bounded"])
        drain = next(e for e in events(run_dir) if e["event"] == "consumers_drain")
        assert drain["drained"] is True and drain["lag"] == {"healthy": 0, "stuck": 0}
        consumed = rows(run_dir / "consumes")
        stop = next(e for e in events(run_dir) if e["event"] == "consumers_stop")
        assert {g: sum(1 for r in consumed if r["group"] == g) for g in ("healthy", "stuck")} == stop["rows"]
