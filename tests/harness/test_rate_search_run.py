"""The sustainable-rate search end to end on the emulator (`rmq-chaos run`, then the Spark analysis): the shipped
`scenarios/rate-search-disk-throttle.yaml` with shorter phases and steps. The live controller moves the load's
rate step by step (each step starts at the rate the previous one chose), a step within bounds raises it and one
past a bound lowers it (and the step after it is judged only once what the overload left has had time to clear); with the master's store throttled to 1 MiB/s the search is pushed past a bound and its
answer stays under what 1 MiB/s carries; the report recomputes every step from the rows and charts them. The
throttled phase has one step more than the healthy one: from 200/s at factor 0.5 its sixth step asks for 1519 sends
of 1 KiB a second, half as much again as the throttle carries (a loaded machine has let a step at 1013/s pass)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from runsupport import REPO, events, valid_run

pytestmark = [pytest.mark.root, pytest.mark.spark]
SHIPPED = REPO / "scenarios" / "rate-search-disk-throttle.yaml"
STEP_S, HOLD = 3, 2
STEPS = {"healthy": 5, "throttled": 6}


def short_scenario(tmp_path: Path) -> Path:
    data = yaml.safe_load(SHIPPED.read_text())
    data["warmup"] = "3s"
    for phase in data["phases"]:
        if "search" in phase:
            phase["duration"] = f"{STEP_S * STEPS[phase['name']]}s"
            phase["search"].update(step=f"{STEP_S}s", hold=HOLD)
        else:
            phase["duration"] = "5s"
    data["expect"] = [e for e in data["expect"] if e["metric"] != "sustainable_rate" or e["phase"] == "throttled"]
    path = tmp_path / "search.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.long
def test_the_search_steps_the_live_load_and_the_throttled_answer_is_capped(tmp_path: Path) -> None:
    with valid_run(short_scenario(tmp_path), tmp_path) as (run_dir, verdict):
        ev = events(run_dir)
        for phase in ("healthy", "throttled"):
            steps = [e for e in ev if e["event"] == "search_step" and e["phase"] == phase]
            assert [s["step"] for s in steps] == list(range(1, STEPS[phase] + 1))
            for before, after in zip(steps, steps[1:], strict=False):
                assert after["rate"] == before["next_rate"], "each step runs at the rate the previous one chose"
                assert after["rate_ns"] == before["end_ns"] <= after["start_ns"] < after["end_ns"]
                if before["within"]:
                    assert before["next_rate"] >= before["rate"], before
                else:
                    assert before["next_rate"] < before["rate"] or before["next_rate"] == 1.0, before
                    assert after["start_ns"] > after["rate_ns"], "the step after an overload is judged later"
        throttled = [e for e in ev if e["event"] == "search_step" and e["phase"] == "throttled"]
        assert any(not s["within"] for s in throttled), "the throttled store pushed the search past a bound"
        search = verdict["search"]
        assert set(search) == {"healthy", "throttled"}
        for name, phase in search.items():
            assert [s["step"] for s in phase["steps"]] == list(range(1, STEPS[name] + 1)), "every step recomputed"
            assert all(s["rows"] > 0 for s in phase["steps"])
        held = {r["name"]: r for r in verdict["expectations"]}
        assert held["throttled-rate-capped"]["status"] == "held"
        assert held["throttled-rate-capped"]["measured"] is not None
        html = (run_dir / "report" / "index.html").read_text()
        assert "sustainable" in html.lower()
