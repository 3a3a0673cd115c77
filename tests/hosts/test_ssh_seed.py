"""The seed pair and the master-killed consumer scenario through `--backend ssh --hosts FILE`, on three hosts
(namesrv, master, slave) plus a load host: the same verdicts as on the local backend (every expectation held), the
records whole (every send a row, fetched from the load host), and nothing left on any host."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import seed_checks
from runsupport import diagnosed, events, full_only, rows, run_dir_of

pytestmark = [pytest.mark.root, pytest.mark.spark]
REPO = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 600


def run_on_hosts(cluster, scenario: str | Path, tmp_path: Path, inventory: Path | None = None, *extra: str
                 ) -> tuple[int, Path, str]:
    """`rmq-chaos run` of a scenario (a file of scenarios/, or a path) on the hosts, then `cleanup --hosts`, which
    must find nothing to undo: (exit code, run dir, stderr)."""
    state, out = tmp_path / "state", tmp_path / "runs"
    inventory = inventory or cluster.inventory
    proc = cluster.rmq_chaos(["run", str(REPO / "scenarios" / scenario), "--out", str(out), "--backend", "ssh",
                              "--hosts", str(inventory), *extra], state, stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert_cleanup_finds_nothing(cluster, inventory, state)
    return proc.returncode, run_dir_of(out), err


def assert_cleanup_finds_nothing(cluster, inventory: Path, state: Path) -> None:
    """`cleanup --hosts` after a command ended: exit 0, nothing to undo on any host."""
    cleanup = cluster.rmq_chaos(["cleanup", "--hosts", str(inventory)], state, stdout=subprocess.PIPE,
                                text=True)
    out_text, _ = cleanup.communicate(timeout=300)
    assert cleanup.returncode == 0, out_text
    assert "0 reverted, 0 failed" in out_text or "nothing of rmq-chaos" in out_text, out_text


def assert_hosts_used(run_dir: Path) -> None:
    info = json.loads((run_dir / "cluster.json").read_text())
    assert info["backend"] == "ssh"
    assert {n["name"]: n["host"] for n in info["nodes"]} == {"namesrv": "n1", "master": "n2", "slave": "n3"}
    for host in ("n1", "n2", "n3", "n4"):
        assert {"offset_start_ns", "error_start_ns"} <= set(info["hosts"][host])
    ev = events(run_dir)
    clocks = {(e["host"], e["when"]) for e in ev if e["event"] == "host_clock"}
    assert clocks == {(h, w) for h in ("n1", "n2", "n3", "n4") for w in ("start", "end")}, "each host's clock offset "\
        "measured as the run started and as it ended"
    totals = next(e for e in ev if e["event"] == "load_stop")["totals"]["result"]
    sent = rows(run_dir / "requests")
    assert len(sent) == totals["fired"] == totals["rows"] > 0, "every send has its row, fetched from the load host"
    assert {r["worker"] for r in sent} == {"w0"}
    assert any((run_dir / "logs" / "load").glob("n4-*.log")), "the load host's worker log came home"


@pytest.mark.long
@pytest.mark.parametrize("scenario", [
    # the default's file runs end to end through compose in the default run (tests/compose/test_compose_seed_pair.py);
    # here the same hosts, agents and records as the 1 MiB file's run, only the broker's config differs (suite time)
    pytest.param("slave-readonly-default.yaml", marks=full_only("~2 min")),
    "slave-readonly-fallbehind-1m.yaml",
])
def test_the_seed_pair_holds_on_hosts(cluster, scenario: str, tmp_path: Path) -> None:
    """The local backend's checks of the seed pair (tests/harness/seed_checks.py), through ssh."""
    code, run_dir, err = run_on_hosts(cluster, scenario, tmp_path)
    assert code == 0, err[-3000:]
    assert_hosts_used(run_dir)
    seed_checks.the_incident(scenario, run_dir)


@pytest.mark.parametrize("backend", [pytest.param("ssh", marks=full_only(
    "~3.5 min (the default run takes consumers, a killed master and hosts together in "
    "tests/hosts/test_ssh_two_groups.py)"))])
def test_master_killed_consumers_holds_on_hosts(cluster, tmp_path: Path, backend: str) -> None:
    """... and `rmq-chaos diagnose` names the logs gathered from the hosts `master-lost`."""
    code, run_dir, err = run_on_hosts(cluster, "master-killed-consumers.yaml", tmp_path)
    assert code == 0, err[-3000:]
    assert_hosts_used(run_dir)
    findings = diagnosed(run_dir)
    assert [f.mechanism.id for f in findings][:1] == ["master-lost"], [(f.mechanism.id, f.counts) for f in findings]
