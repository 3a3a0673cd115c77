"""Ctrl-C and SIGTERM across hosts (issue 41), sent as a terminal or `timeout` sends them: to the whole process group
of the command. The harness's SSH channels are in sessions of their own, so the signal reaches the harness alone and
it winds down in order through them:

- `rmq-chaos run`, Ctrl-C while a partition between the master's and the slave's hosts is in effect: the load is
  stopped on the load host and its rows fetched home (every row the load fired is in requests/), the fault reverted,
  the nodes taken down; exit 2 (interrupted), one line, no traceback, and nothing of the run on any host or on the
  control node without `rmq-chaos cleanup`;
- `rmq-chaos cluster up`, SIGTERM while it comes up (the hosts' agents started): what was made is taken down,
  nothing left, no traceback;
- SIGTERM once it is ready starts the wind-down; a second one ends `cluster up` at once and says that `cleanup
  --hosts` removes what is left, which it does.

benchmarks/hosts_ctrl_c.py does the same at random moments of master-slave-partition, ten rounds."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from runsupport import events
from test_ssh_kill import _chain_left, _leftovers

from faults.journal import Journal

pytestmark = pytest.mark.root
START_S = 300
HOSTS = ("n1", "n2", "n3", "n4")
RUN = """\
name: interrupted-on-hosts
cluster:
  backend: ssh
  version: "4.9.1"
  store_size: 64MiB
  broker: {common: {mappedFileSizeCommitLog: 4194304}}
load:
  clients: [{name: flood, users: 4, timeout: 3s}]
warmup: 1s
phases:
  - name: calm
    duration: 2s
  - name: cut
    duration: 300s
    faults:
      - {id: cut, kind: partition, target: slave, params: {peers: [master]}}
"""


def _start(cluster, tmp_path: Path, args: list[str]) -> tuple[subprocess.Popen, Path, Path]:
    state, out = tmp_path / "state", tmp_path / "runs"
    proc = cluster.rmq_chaos([*args, "--out", str(out), "--hosts", str(cluster.inventory)], state,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    return proc, state, out


def _wait(proc: subprocess.Popen, what: str, reached) -> None:
    deadline = time.monotonic() + START_S
    while not reached():
        assert proc.poll() is None, f"exited {proc.returncode} before {what}: {proc.stderr.read()[-2000:]}"
        assert time.monotonic() < deadline, f"{what} not reached within {START_S} s"
        time.sleep(0.2)


def _events(out: Path) -> list[dict]:
    runs = list(out.iterdir()) if out.exists() else []
    return events(runs[0]) if runs and (runs[0] / "events.jsonl").exists() else []


def _nothing_left(cluster, state: Path) -> None:
    for host in HOSTS:
        assert _leftovers(cluster, host) == [], host
    assert not _chain_left(cluster, "n3")
    local = Journal(state).open_entries() if state.exists() else []
    assert local == [], [f"{e.kind} {e.target}" for e in local]


@pytest.mark.long
def test_ctrl_c_during_a_partition_winds_down_through_the_hosts(cluster, tmp_path: Path) -> None:
    scenario = tmp_path / "run.yaml"
    scenario.write_text(RUN, encoding="utf-8")
    proc, state, out = _start(cluster, tmp_path, ["run", str(scenario), "--no-report"])
    try:
        _wait(proc, "the partition verified", lambda: any(
            e.get("event") == "fault" and e.get("action") == "verify" and e.get("status") == "ok"
            for e in _events(out)))
        time.sleep(random.uniform(0.0, 2.0))  # a moment within the fault's phase, not a synchronisation
        os.killpg(proc.pid, signal.SIGINT)  # the terminal's Ctrl-C: the whole foreground group
        _, err = proc.communicate(timeout=START_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 2, err[-2000:]
    assert "Traceback" not in err, err[-3000:]
    assert "SIGINT: winding down" in err
    ev = _events(out)
    assert any(e.get("event") == "run_interrupted" for e in ev)
    stop = next(e for e in ev if e.get("event") == "load_stop")
    fired = stop["totals"]["result"]["fired"]
    rows = sum(pq.ParquetFile(p).metadata.num_rows for p in (next(out.iterdir()) / "requests").glob("*.parquet"))
    assert fired > 0 and rows == fired, f"{rows} rows recorded of {fired} fired on the load host"
    assert [e["status"] for e in ev if e.get("event") == "fault" and e.get("action") == "revert"][-1] == "ok"
    _nothing_left(cluster, state)


@pytest.mark.long
@pytest.mark.parametrize("moment", ["coming-up"])  # once ready: the first signal of the next test
def test_sigterm_to_cluster_up_takes_it_down(cluster, tmp_path: Path, moment: str) -> None:
    scenario = tmp_path / "up.yaml"
    scenario.write_text(RUN, encoding="utf-8")
    proc, state, out = _start(cluster, tmp_path, ["cluster", "up", str(scenario)])
    try:
        wanted = "host_clock" if moment == "coming-up" else "cluster_ready"  # the agents up / the cluster ready
        _wait(proc, wanted, lambda: any(e.get("event") == wanted for e in _events(out)))
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=START_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in err, err[-3000:]
    assert proc.returncode in ((0, 1) if moment == "coming-up" else (0,)), err[-2000:]
    _nothing_left(cluster, state)


@pytest.mark.long
def test_a_second_signal_stops_at_once_and_cleanup_hosts_removes_the_rest(cluster, tmp_path: Path) -> None:
    """The second SIGTERM is sent once the first is acknowledged (two sent together are one pending signal)."""
    scenario = tmp_path / "up.yaml"
    scenario.write_text(RUN, encoding="utf-8")
    proc, state, out = _start(cluster, tmp_path, ["cluster", "up", str(scenario)])
    lines: list[str] = []
    try:
        _wait(proc, "the cluster ready", lambda: any(e.get("event") == "cluster_ready" for e in _events(out)))
        os.killpg(proc.pid, signal.SIGTERM)
        for line in proc.stderr:
            lines.append(line)
            if "taking the cluster down" in line:
                os.killpg(proc.pid, signal.SIGTERM)
                break
        lines += proc.stderr.readlines()
        proc.wait(START_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = "".join(lines)
    assert "Traceback" not in err, err[-3000:]
    said = [ln for ln in lines if "again: stopping now" in ln]
    assert len(said) == 1 and f"cleanup --hosts {cluster.inventory}" in said[0], err[-2000:]
    assert proc.returncode == 2
    clean = cluster.rmq_chaos(["cleanup", "--hosts", str(cluster.inventory)], state, stdout=subprocess.PIPE,
                              text=True)
    text, _ = clean.communicate(timeout=300)
    assert clean.returncode == 0, text
    _nothing_left(cluster, state)
