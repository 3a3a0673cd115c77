"""NodeTarget JSON round trip, pid sources, the cluster state file, parameter errors and the registry."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from faults.cluster_state import list_clusters, read_cluster_state, remove_cluster_state, write_cluster_state
from faults.errors import FaultRefused
from faults.registry import FAULTS, fault_class
from faults.system.procs import ProcId
from faults.target import NodeTarget, PidFile, StaticPids, pid_source_from_json


def _target(**kw) -> NodeTarget:
    base = dict(name="slave", role="slave", run_id="r1", pids=StaticPids([ProcId.of(os.getpid())]),
                cgroups={"memory": "/sys/fs/cgroup/memory/rmq-chaos/r1/slave"}, store_mount="/m",
                store_device="/dev/loop9", store_image="/i.img", ports={"listen": 1, "ha": 2},
                extras={"ha_relay": {"control": "/c.sock"}})
    base.update(kw)
    return NodeTarget(**base)


def test_target_round_trips_through_json():
    t = _target()
    back = NodeTarget.from_json(t.to_json())
    assert back.to_json() == t.to_json()
    assert back.pids() == [os.getpid()]


def test_plain_callable_pids_are_frozen_into_identities():
    t = _target(pids=lambda: [os.getpid()])
    assert t.to_json()["pids"] == {"static": [ProcId.of(os.getpid()).to_json()]}


def test_pidfile_follows_restarts_and_ignores_dead_or_reused_pids(tmp_path):
    pf = PidFile(str(tmp_path / "n.pid"))
    assert pf() == []
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        pf.write(ProcId.of(child.pid))
        assert pf() == [child.pid]
        assert pid_source_from_json(pf.to_json())() == [child.pid]
        pf.write(ProcId(child.pid, ProcId.of(child.pid).start + 1))  # same pid number, another process
        assert pf() == []
    finally:
        child.kill()
        child.wait()


def test_cluster_state_file(tmp_path):
    path = write_cluster_state(tmp_path, "c1", "r1", "local", [_target(), _target(name="master", role="master")])
    assert path == tmp_path / "clusters" / "c1.json"
    state = read_cluster_state(tmp_path, "c1")
    assert state.node_names() == ["slave", "master"] and state.owner.pid == os.getpid()
    assert state.target("master").role == "master"
    with pytest.raises(FaultRefused, match="no node 'namesrv'"):
        state.node("namesrv")
    with pytest.raises(FaultRefused, match=r"c2.json: no such cluster state \(clusters: c1\)"):
        read_cluster_state(tmp_path, "c2")
    assert list_clusters(tmp_path) == ["c1"] and remove_cluster_state(tmp_path, "c1") and not list_clusters(tmp_path)


def test_control_is_rebuilt_by_its_factory(tmp_path):
    from faults.journal import Journal
    from harness.resources.node_process import ProcessNode

    j = Journal(tmp_path)
    node = ProcessNode(journal=j, name="n", argv=["true"], run_id="r", pidfile=str(tmp_path / "p"), ready_port=5)
    back = NodeTarget.from_json(_target(control=node).to_json(), j)
    assert isinstance(back.control, ProcessNode) and back.control.to_json() == node.to_json()


@pytest.mark.parametrize("kind,params,match", [
    ("disk_throttle", {}, r"disk_throttle: params.*give at least one of write_bps"),
    ("disk_throttle", {"write_bps": 10}, r"params.write_bps: Input should be greater than or equal to 4096"),
    ("disk_throttle", {"write_bsp": 4096}, r"params.write_bsp: Extra inputs are not permitted \(allowed keys: "
                                           r"write_bps, read_bps, write_iops, read_iops\)"),
    ("ha_link", {"mode": "slow"}, r"params.mode: Input should be 'delay', 'throttle' or 'cut'"),
    ("ha_link", {"mode": "delay"}, r"mode delay needs delay_ms"),
    ("memory_pressure", {"limit_bytes": "1GiB", "limit_fraction": 0.5}, "not both"),
    ("freeze", {"method": "ptrace"}, r"params.method: Input should be 'signal' or 'cgroup'"),
    ("partition", {"peers": ["n2"], "direction": "up"}, r"params.direction: Input should be 'both', 'in' or 'out'"),
    ("partition", {"peers": ""}, r"params.peers: Value error, give node names \(a list, or \"n2,n3\"\) or \"all\""),
    ("net_bandwidth", {"peers": "all"}, r"params.rate_bps: Field required \(allowed keys: peers, rate_bps, direction\)"),
    ("net_delay", {"peers": "all", "delay_ms": 0}, r"params.delay_ms: Input should be greater than 0"),
])
def test_bad_params_get_one_line_errors_naming_key_and_allowed(kind, params, match):
    with pytest.raises(FaultRefused, match=match) as err:
        FAULTS[kind].parse_params(params)
    assert "\n" not in str(err.value)


def test_params_defaults_and_byte_sizes():
    p = FAULTS["memory_pressure"].parse_params({"hog_bytes": "64MiB"})
    assert p.hog_bytes == 64 << 20 and p.limit_fraction is None
    assert FAULTS["memory_pressure"].parse_params({}).limit_fraction == 0.5


def test_registry_names_every_fault_and_refuses_unknown_kinds():
    assert set(FAULTS) == {"readonly_fs", "disk_freeze", "disk_throttle", "memory_pressure", "freeze", "kill",
                           "restart", "ha_link", "consumer_stuck", "partition", "net_bandwidth", "net_delay"}
    with pytest.raises(FaultRefused, match=r"fault kind 'ro' unknown \(allowed: readonly_fs, "):
        fault_class("ro")
    for cls in FAULTS.values():
        d = cls.describe()
        assert d["kind"] == cls.kind and d["summary"] and isinstance(d["params"], dict)
