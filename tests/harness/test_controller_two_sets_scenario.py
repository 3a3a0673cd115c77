"""`scenarios/master-killed-two-sets.yaml` (issue 42) on the emulator, as a user runs it, its phases shortened: 5.3.0
controller mode, one controller (in the name server) serving two broker sets, broker-a's master SIGKILLed under load.
Every expectation holds: the 5.3 producer's retries keep SEND_OK going on broker-b, broker-a's slave is elected and
serves again, nothing acknowledged is lost. The fault names the set's role and the node that held it; the role
samplers wrote one line of roles per set, broker-a's naming its new master in a new epoch and broker-b's master
never changing; the failover figures are broker-a's; every set's master and slave are read back under their roles."""
from __future__ import annotations

from pathlib import Path

import pytest
from runsupport import events, full_only, shortened, valid_run

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "master-killed-two-sets.yaml"
SHORTER = (("duration: 10s\n  - name: a-failover", "duration: 5s\n  - name: a-failover"),
           ("duration: 45s", "duration: 35s"), ("restart_after_s: 20", "restart_after_s: 8"),
           ("  - name: after\n    duration: 10s", "  - name: after\n    duration: 5s"))


@pytest.mark.parametrize("backend", [pytest.param("local", marks=full_only(
    "~95 s (the default run takes the same shortened file across hosts: tests/hosts/test_ssh_controller.py)"))])
def test_a_master_killed_in_one_of_two_sets(tmp_path: Path, backend: str) -> None:
    with valid_run(shortened(SCENARIO, tmp_path, SHORTER), tmp_path, wait_s=900) as (run_dir, verdict):
        check_two_sets(run_dir, verdict)


def check_two_sets(run_dir: Path, verdict: dict) -> list[dict]:
    """What every backend's run of the shortened file shows (above); its events."""
    assert verdict["failover"]["node"] == "broker-a-0"
    evs = events(run_dir)
    applied = next(e for e in evs if e["event"] == "fault" and e["action"] == "apply" and e["status"] == "ok")
    assert (applied["target"], applied["node"]) == ("broker-a/master", "broker-a-0")
    roles = [e for e in evs if e["event"] == "roles" and "route_master" in e]
    a = [e for e in roles if e["group"] == "broker-a"]
    b = [e for e in roles if e["group"] == "broker-b"]
    assert a[0]["master"] == "broker-a-0" and any(e["master"] == "broker-a-1" and e["master_epoch"] == 2 for e in a)
    assert b and all(e["master"] == "broker-b-0" for e in b)
    readback = next(e for e in evs if e["event"] == "readback_end")
    assert set(readback["nodes"]) == {"broker-a/master", "broker-a/slave", "broker-b/master", "broker-b/slave"}
    assert all(n > 0 for n in readback["nodes"].values())
    assert verdict["loss"]["lost"] == 0
    return evs
