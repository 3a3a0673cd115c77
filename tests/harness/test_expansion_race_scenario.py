"""`scenarios/syncstateset-expansion-race.yaml` (issue 26, apache/rocketmq#5663) on the emulator, as a user runs it: the
slave, frozen until the master dropped it from the SyncStateSet, is thawed, catches up and is taken back in (about 10
s after the thaw); 15 s after the thaw the master is SIGKILLed. Unclean election is off, so the slave can be elected
only because it is back in the set: it is, it is elected, and nothing acknowledged is lost. Every expectation of the
file holds; real 5.3.0 figures of the same file: docs/fidelity.md. About 2.5 minutes
(tests/emulator/test_emu_controller_sync_state_set.py covers the SyncStateSet rule alone)."""
from __future__ import annotations

from pathlib import Path

import pytest
from runsupport import REPO, events, fault_event, valid_run

pytestmark = pytest.mark.long
SCENARIO = REPO / "scenarios" / "syncstateset-expansion-race.yaml"


def test_the_slave_back_in_the_set_is_elected_and_nothing_is_lost(tmp_path: Path) -> None:
    with valid_run(SCENARIO, tmp_path, wait_s=900) as (run_dir, verdict):
        evs = events(run_dir)
        kill = fault_event(evs, "kill-master", "apply")
        sets = [(e["wall_ns"], sorted(e.get("sync_state_set") or [])) for e in evs if e["event"] == "roles"]
        shrunk = next(t for t, s in sets if s == ["broker-0"])
        regrown = next(t for t, s in sets if t > shrunk and s == ["broker-0", "broker-1"])
        assert regrown < kill["wall_ns"], "the slave was back in the SyncStateSet before the kill"
        assert any(e["master"] == "broker-1" for e in evs if e["event"] == "roles" and e["wall_ns"] > kill["wall_ns"])
        assert verdict["loss"]["lost"] == 0
