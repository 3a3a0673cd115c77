"""The ready field-incident scenario of issue 12, `scenarios/consumer-backlog-stuck-thread.yaml`, as a user runs it
(`rmq-chaos run`, emulator, then the Spark analysis): every expectation holds (exit 0). Two groups consume one
topic; in the `stuck` phase a share of one group's messages block its consume threads: its lag grows and its
committed offset stops while the other group keeps up, and after the drain both groups got every acknowledged
send. The figures of the same file on the real 4.9.1 are in docs/scenarios.md."""
from __future__ import annotations

from pathlib import Path

import pytest
from runsupport import events, rows, valid_run

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "consumer-backlog-stuck-thread.yaml"


@pytest.mark.long
def test_backlog_scenario_is_valid_on_the_emulator(tmp_path: Path) -> None:
    with valid_run(SCENARIO, tmp_path) as (run_dir, verdict):
        measured = {r["name"]: r["measured"] for r in verdict["expectations"]}
        assert measured["stuck-lag-grows"] > 10 * max(1, measured["healthy-lag-bounded"])
        drain = next(e for e in events(run_dir) if e["event"] == "consumers_drain")
        assert drain["drained"] is True and drain["lag"] == {"healthy": 0, "stuck": 0}
        consumed = rows(run_dir / "consumes")
        stop = next(e for e in events(run_dir) if e["event"] == "consumers_stop")
        assert {g: sum(1 for r in consumed if r["group"] == g) for g in ("healthy", "stuck")} == stop["rows"]
