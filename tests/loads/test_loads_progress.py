"""The terminal progress panel shows the figures it is given: phase, achieved and target rate, outcomes so far,
p99 of the last seconds and the start lag."""
from __future__ import annotations

from rich.console import Console

from loads.progress import render
from loads.tally import LoadStats


def test_panel_shows_rate_outcomes_and_p99():
    stats = LoadStats(elapsed_s=12, phase="readonly", state="running", target_rate=3000, rate=2987.4, fired=35_000,
                      completed=34_990, in_flight=10, rows_written=34_000, parts=12, workers=2,
                      outcomes={"SEND_OK": 30_000, "RemotingTooMuchRequestException": 4_990}, p50_ms=1.25,
                      p99_ms=3012.0, max_ms=3100.0, lag_p99_ms=0.42).to_json()
    console = Console(record=True, width=120)
    console.print(render(stats))
    text = console.export_text()
    for expected in ("readonly", "2,987/s of 3,000/s", "SEND_OK", "30,000", "RemotingTooMuchRequestException",
                     "4,990", "1.25 ms / 3,012 ms", "0.42 ms", "34,000 in 12 parts", "2 worker(s)"):
        assert expected in text, expected
