"""A broker that dies on its own during a run (here SIGBUS, what a store write into a full filesystem does to a
process that writes through mmap): the run fails, its error and a `node_exit` event name the node and the signal,
the records taken so far stay, and nothing is left behind."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from runsupport import assert_nothing_left, end_run, events, rmq_chaos, rows, run_dir_of, wait_for_event

pytestmark = pytest.mark.root
SCENARIO = """\
name: master-crashes
cluster:
  version: "4.9.1"
  store_size: 64MiB
  broker:
    common: {mappedFileSizeCommitLog: 4194304}
load:
  clients:
    - {name: flood, users: 4, timeout: 3s, message_size: 512B}
warmup: 1s
phases:
  - name: before
    duration: 2s
  - name: crash
    duration: 4s
"""
START_S = 120


def test_a_broker_that_dies_is_named_in_the_failed_run(tmp_path: Path) -> None:
    scenario = tmp_path / "crash.yaml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    state, out = tmp_path / "state", tmp_path / "runs"
    proc = rmq_chaos(["run", str(scenario), "--out", str(out), "--no-report"], state)
    try:
        wait_for_event(out, lambda e: e.get("event") == "phase_start" and e.get("phase") == "crash", START_S, proc)
        run_dir = run_dir_of(out)
        (master,) = [n for n in json.loads((run_dir / "cluster.json").read_text())["nodes"] if n["name"] == "master"]
        os.kill(master["pid"], signal.SIGBUS)
        code = proc.wait(180)
    finally:
        end_run(proc, state)
    assert code != 0, "a run whose master died is not a pass"
    evs = events(run_dir)
    exits = [e for e in evs if e.get("event") == "node_exit"]
    assert [(e["node"], e["status"]) for e in exits] == [("master", "killed by SIGBUS")]
    (end,) = [e for e in evs if e.get("event") == "run_end"]
    assert end["status"] == "failed" and "master killed by SIGBUS" in end["error"]
    assert rows(run_dir / "requests"), "the sends recorded before the crash are kept"
    assert_nothing_left(state, run_dir.name)
