"""`disk_freeze` on the slave in controller mode (5.3.0 profile, the controller in the name server) as a user runs it:
the run ends on its own, the freeze reverted at its phase's end, and nothing is left. Before, a broker blocked on its
frozen store held its address-space lock (a thread in D state), so the harness's first read of that broker's
/proc/<pid>/cmdline (the thread dumps taken while a fault is on) waited for the thaw that only the harness itself
would bring: the run hung in the fault's window with the store frozen past its bound, `ps` on the machine hung too,
until someone ran `fsfreeze -u` (found by `rmq-chaos explore`). Reads of those /proc files now take a bound when a
thread of the process is in D state (`faults.system.procs.read_proc`)."""
from __future__ import annotations

from pathlib import Path

import pytest
from runsupport import events, valid_run

pytestmark = pytest.mark.long
SCENARIO = """\
name: frozen-slave-controller
description: "5.3.0 controller mode, the slave's store frozen 8 s under load"
cluster:
  version: "5.3.0"
  mode: controller
  store_size: 128MiB
  heap: "-Xms256m -Xmx256m -Xmn128m"
  ready_timeout: 120s
  broker:
    common: {mappedFileSizeCommitLog: 16777216}
topic: {name: ChaosTopic, queues: 4}
load:
  model: open
  rate: 100
  clients:
    - {name: flood, profile: java-5.3, users: 4, max_users: 32, timeout: 3s, message_size: 256B}
phases:
  - name: steady
    duration: 4s
  - name: frozen
    duration: 8s
    faults:
      - {id: freeze, kind: disk_freeze, target: slave}
  - name: after
    duration: 4s
expect:
  - {name: steady-sends-ok, phase: steady, outcome: SEND_OK, metric: share, min: 0.99}
"""


def test_a_frozen_slave_in_controller_mode_is_thawed_at_its_bound(tmp_path: Path) -> None:
    scenario = tmp_path / "frozen-slave-controller.yaml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    with valid_run(scenario, tmp_path, wait_s=600) as (run_dir, _verdict):
        evs = events(run_dir)
        actions = [(e["action"], e["status"]) for e in evs if e["event"] == "fault" and e["fault_id"] == "freeze"]
        assert ("verify", "ok") in actions and actions[-1] == ("revert", "ok")
        revert = next(e for e in evs if e["event"] == "fault" and e["action"] == "revert" and e["status"] == "started")
        after = next(e for e in evs if e["event"] == "phase_start" and e["phase"] == "after")
        assert revert["wall_ns"] <= after["wall_ns"], "the freeze was reverted as its phase ended, not later"
