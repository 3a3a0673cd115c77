"""`rmq-chaos explore --backend ssh --hosts FILE`: explore drives the ssh backend as it drives the local one. The
space of scenarios/explore/pair-4.9.1.yaml (a 4.9.1 SYNC_MASTER pair; every schedule makes a send error reach the
application) on the session's namespace hosts (name server n1, master n2, slave n3, load n4), emulator, with one
explored run and one shrinking run: the first run fails the file's invariant, the shrinking step drops a fault and
still fails, every run placed its nodes on the hosts and fetched the load host's rows, `minimal.yaml` is written,
and `cleanup --hosts` afterwards finds nothing to undo on any host."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from runsupport import explored_and_shrunk, full_only, one_shrink_pair_space, rows
from test_ssh_seed import assert_cleanup_finds_nothing

pytestmark = [pytest.mark.root, pytest.mark.spark, *full_only("~3 min (two runs across hosts)")]


def test_explore_across_hosts_finds_and_shrinks(cluster, tmp_path: Path) -> None:
    space = one_shrink_pair_space(tmp_path, "12m")
    state, out = tmp_path / "state", tmp_path / "explore"
    proc = cluster.rmq_chaos(["explore", str(space), "--out", str(out), "--backend", "ssh", "--program", "emulator",
                              "--hosts", str(cluster.inventory)], state, stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=1200)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert_cleanup_finds_nothing(cluster, cluster.inventory, state)
    assert proc.returncode == 1, err[-3000:]
    for run_dir in explored_and_shrunk(out):
        info = json.loads((run_dir / "cluster.json").read_text())
        assert info["backend"] == "ssh"
        assert {n["name"]: n["host"] for n in info["nodes"]} == {"namesrv": "n1", "master": "n2", "slave": "n3"}
        assert rows(run_dir / "requests"), "the load host's rows came home"
