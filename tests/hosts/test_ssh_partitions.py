"""The two partition scenarios through `--backend ssh` on the session's namespace hosts (name server n1, master n2,
slave n3, load n4), emulator: each run valid (every expectation held, exit 0), its partition applied and verified on
the cut node's host, the records whole and nothing left on any host (`run_on_hosts`, `assert_hosts_used`).
master-slave-partition has about 90 s of phases, namesrv-partition about 165 s here (the name server's 120 s broker
expiry is what it is about; its healed phase shortened from 40 s to 15 s for the suite's 20 minutes: the producers'
cached routes serve throughout, and the brokers' expiry the diagnosis reads is in the partitioned phase)."""
from __future__ import annotations

from pathlib import Path

import pytest
import test_ssh_seed
from runsupport import diagnosed, events, full_only, shortened
from test_ssh_seed import assert_hosts_used, run_on_hosts

pytestmark = [pytest.mark.root, pytest.mark.spark]
RUN_TIMEOUT_S = 1500
HEALED_SHORTER = (("  - name: healed\n    duration: 40s", "  - name: healed\n    duration: 15s"),)
"""Four hosts, the harness installed, 105 s (or 205 s) of load and the report's Spark: on a loaded 2-core machine
(load 30) one run took over 600 s, the suite's default."""


def _partition_held(run_dir: Path) -> None:
    ev = [e for e in events(run_dir) if e["event"] == "fault" and e["fault_id"] == "cut"]
    assert {(e["action"], e["status"]) for e in ev} >= {("apply", "ok"), ("verify", "ok"), ("revert", "ok")}, ev


def _dumped_while_cut(run_dir: Path) -> None:
    """Each broker's host agent had it print a thread dump three times in the partitioned phase, and read its memory
    status each time (`logs/<node>/memory-status.log`, written on the control node from the agent's answer)."""
    dumps = [e for e in events(run_dir) if e["event"] == "thread_dump"]
    assert len(dumps) == 3 and all(d["nodes"]["master"] and d["nodes"]["slave"] for d in dumps), dumps
    out = (run_dir / "logs" / "master" / "stdout.log").read_text(errors="replace")
    assert out.count("Full thread dump") == 3, out[-2000:]
    status = (run_dir / "logs" / "master" / "memory-status.log").read_text()
    assert status.count(", master)\n") == 3 and status.count("\nVmSwap:") == 3, status


@pytest.mark.long
@pytest.mark.timeout(RUN_TIMEOUT_S + 300)
@pytest.mark.parametrize(("scenario", "mechanism"), [
    pytest.param("master-slave-partition.yaml", "slave-dropped", marks=full_only(
        "~3 min (the default run applies, verifies and reverts the same partition across the hosts in "
        "tests/hosts/test_ssh_signals.py, and diagnoses slave-dropped from recorded logs in tests/diagnose)")),
    ("namesrv-partition.yaml", "brokers-expired")])
def test_a_partition_scenario_holds_on_hosts(cluster, scenario: str, mechanism: str, tmp_path: Path,
                                             monkeypatch) -> None:
    """... and `rmq-chaos diagnose` names the run's logs (gathered from the hosts) as the partition's mechanism."""
    monkeypatch.setattr(test_ssh_seed, "RUN_TIMEOUT_S", RUN_TIMEOUT_S)
    if scenario == "namesrv-partition.yaml":
        scenario = shortened(test_ssh_seed.REPO / "scenarios" / scenario, tmp_path, HEALED_SHORTER)
    code, run_dir, err = run_on_hosts(cluster, scenario, tmp_path)
    assert code == 0, err[-3000:]
    assert_hosts_used(run_dir)
    _partition_held(run_dir)
    _dumped_while_cut(run_dir)
    findings = diagnosed(run_dir)
    assert findings and findings[0].mechanism.id == mechanism, [(f.mechanism.id, f.counts) for f in findings]
