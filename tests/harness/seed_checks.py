"""What a run directory of the seed pair must show, whichever backend ran it (local, compose or ssh): the run's
events in order, the read-only fault applied, verified by EROFS and reverted, every request recorded, metrics and
logs of the three nodes, and the incident's shape (shared/fixtures/README.md): for the default haSlaveFallbehindMax
SEND_OK after the fault until the replication cliff, then timeouts and the probe's "sendDefaultImpl call timeout";
for 1 MiB, timeouts first, then SLAVE_NOT_AVAILABLE within milliseconds. The caller checks the exit code and that
nothing was left (its backend's way). Used by the local, compose and ssh seed tests."""
from __future__ import annotations

import json
from pathlib import Path

from runsupport import events, rows

EVENTS_IN_A_RUN = ("run_start", "cluster_up", "cluster_ready", "load_start", "phase_start", "phase_end", "load_stop",
                   "readback_start", "readback_end", "cluster_down", "run_end")
ACKED = ("SEND_OK", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE", "FLUSH_DISK_TIMEOUT")


def records(run_dir: Path) -> tuple[list[dict], dict[str, int], list[dict]]:
    """The run's events, the fault's evidence and the records; returns the request rows, each phase's start and the
    read-back rows."""
    ev = events(run_dir)
    names = [e["event"] for e in ev]
    for name in EVENTS_IN_A_RUN:
        assert name in names, name
    assert ev[-1]["event"] == "run_end" and ev[-1]["status"] == "completed", ev[-1]
    fault = [e for e in ev if e["event"] == "fault" and e["fault_id"] == "ro"]
    assert [(e["action"], e["status"]) for e in fault if e["action"] != "step"] == [
        ("apply", "started"), ("apply", "ok"), ("verify", "started"), ("verify", "ok"), ("revert", "started"),
        ("revert", "ok")]
    assert fault[3]["evidence"]["write_errno"] == "EROFS"
    requests = rows(run_dir / "requests")
    totals = next(e for e in ev if e["event"] == "load_stop")["totals"]["result"]
    assert len(requests) == totals["fired"] == totals["rows"], "every request fired is recorded"
    assert len({r["key"] for r in requests}) == len(requests)
    readback = rows(run_dir / "readback")
    assert {r["node"] for r in readback} == {"master", "slave"}
    assert (run_dir / "report" / "verdict.json").exists()
    return requests, {e["phase"]: e["wall_ns"] for e in ev if e["event"] == "phase_start"}, readback


def process_figures(run_dir: Path, phase_start: dict[str, int]) -> None:
    """Nodes run as processes (local, ssh): per-process metrics and log files of the three nodes."""
    metrics = rows(run_dir / "metrics")
    assert {m["node"] for m in metrics} == {"namesrv", "master", "slave"}
    assert all(m["rss_bytes"] for m in metrics if m["ts_ns"] < phase_start["readonly"])
    assert any(m["commitlog_max_offset"] for m in metrics if m["node"] == "master")
    assert max(m["slave_fallbehind_bytes"] or 0 for m in metrics) > 0, "the slave fell behind after the cliff"
    for node in ("master", "slave", "namesrv"):
        assert list((run_dir / "logs" / node).iterdir()), f"logs of {node} copied"


def acked_after_fault_not_on_slave(requests: list[dict], readback: list[dict], fault_ns: int) -> int:
    on_slave = {r["key"] for r in readback if r["node"] == "slave"}
    on_master = {r["key"] for r in readback if r["node"] == "master"}
    acked = [r for r in requests if r["start_ns"] > fault_ns and r["outcome"] in ACKED]
    assert all(r["key"] in on_master for r in acked), "an acknowledged message is missing on the master"
    return sum(1 for r in acked if r["key"] not in on_slave)


def default_fallbehind(run_dir: Path, requests: list[dict], phase_start: dict[str, int], readback: list[dict]) -> None:
    """slave-readonly-default.yaml: SEND_OK until the cliff, then the probe's call timeout; few SLAVE_NOT_AVAILABLE."""
    ro = phase_start["readonly"]
    during = [r for r in requests if r["phase"] == "readonly"]
    # SEND_OK continued after the fault (the slave ignored EROFS), until the replication cliff
    assert any(r["outcome"] == "SEND_OK" and r["start_ns"] > ro for r in during)
    # then timeouts; the probe's 30 s send ends in "sendDefaultImpl call timeout"
    probe = [r for r in during if r["client"] == "probe" and r["outcome"] == "RemotingTooMuchRequestException"]
    assert probe and all(r["service_ms"] >= 29_000 for r in probe)
    # SLAVE_NOT_AVAILABLE only for puts that met the master's connection count at zero while the slave reconnected
    # (the real 4.9.1: 0 to 152 per run, at most 5.6 % of the phase's sends)
    assert sum(r["outcome"] == "SLAVE_NOT_AVAILABLE" for r in during) <= 0.1 * len(during)
    assert acked_after_fault_not_on_slave(requests, readback, ro) >= 1


def fallbehind_1m(run_dir: Path, requests: list[dict], phase_start: dict[str, int], readback: list[dict]) -> None:
    """slave-readonly-fallbehind-1m.yaml: timeouts while the master accepts 1 MiB more, then SLAVE_NOT_AVAILABLE
    answered within milliseconds."""
    cluster = json.loads((run_dir / "cluster.json").read_text())
    assert cluster["effective_config"]["master"]["haSlaveFallbehindMax"] == "1048576"
    assert cluster["effective_config"]["slave"]["slaveReadEnable"] == "true"
    ro = phase_start["readonly"]
    sna = sorted(r["service_ms"] for r in requests if r["outcome"] == "SLAVE_NOT_AVAILABLE")
    assert sna, "SLAVE_NOT_AVAILABLE once the gap passed 1 MiB"
    assert sna[len(sna) // 2] < 100, f"answered within milliseconds (median {sna[len(sna) // 2]:.1f} ms)"
    first_sna = min(r["start_ns"] for r in requests if r["outcome"] == "SLAVE_NOT_AVAILABLE")
    timeouts = [r for r in requests if ro < r["start_ns"] < first_sna and r["outcome"] != "SEND_OK"]
    assert timeouts, "timeouts came first, while the master accepted the 1 MiB beyond the stuck slave"
    assert acked_after_fault_not_on_slave(requests, readback, ro) >= 1


def the_incident(scenario: str, run_dir: Path, processes: bool = True) -> None:
    """Every check of `scenario`'s run directory; `processes=False` leaves the per-process figures to the caller."""
    requests, phase_start, readback = records(run_dir)
    if processes:
        process_figures(run_dir, phase_start)
    BY_SCENARIO[scenario](run_dir, requests, phase_start, readback)


BY_SCENARIO = {"slave-readonly-default.yaml": default_fallbehind, "slave-readonly-fallbehind-1m.yaml": fallbehind_1m}
