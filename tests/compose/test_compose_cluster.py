"""A compose cluster held by `rmq-chaos cluster up --backend compose --detach`, every fault through `rmq-chaos fault`
on its containers (Docker API, the containers' cgroups, the host's loop mounts, the HA relay), each proven by the
fault's own measurement and reverted; then the holder is SIGKILLed with a fault in effect and `rmq-chaos cleanup`
must leave no container (nor the holder of the run's network namespace), network, volume, mount, loop device, cgroup,
swap file, process or journal entry. `rmq-chaos fault` and `cluster status` join the cluster's namespace to reach
its brokers and relay."""
from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from compose_support import REPO, assert_nothing_left, events, rmq_chaos_run, run_dir_of

from faults.cluster_state import list_clusters, read_cluster_state
from faults.docker import engine
from faults.system import cgroupfs, mounts
from faults.system.procs import swap_bytes
from harness.backends.compose.layout import project_name

pytestmark = [pytest.mark.root, pytest.mark.docker]
SCENARIO = """\
name: compose-faults
cluster:
  version: "4.9.1"
  store_size: 64MiB
  ha_relay: always
  broker:
    common: {mappedFileSizeCommitLog: 4194304}
phases: [{name: idle, duration: 1s}]
"""


class Cluster:
    def __init__(self, state: Path, run_dir: Path) -> None:
        self.state = state
        self.run_dir = run_dir
        self.id = list_clusters(state)[0]
        self.info = json.loads((run_dir / "cluster.json").read_text())
        self.project = self.info["compose_project"]
        self.holder = read_cluster_state(state, self.id).owner

    def node(self, name: str) -> dict[str, Any]:
        return read_cluster_state(self.state, self.id).node(name)

    def fault(self, action: str, *args: str) -> list[dict]:
        """`rmq-chaos fault <action> ...`; the fault events it wrote."""
        log = self.state / f"fault-{time.monotonic_ns()}.jsonl"
        proc = rmq_chaos_run(["fault", action, *args, "--events", str(log)], self.state, timeout_s=180)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return [json.loads(line) for line in log.read_text().splitlines()]


def _evidence(evs: list[dict], action: str) -> dict:
    return next(e for e in evs if e["action"] == action and e["status"] == "ok")["evidence"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, test_image: str) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("compose-cluster")
    state, out = base / "state", base / "runs"
    scenario = base / "scenario.yaml"
    scenario.write_text(SCENARIO)
    up = rmq_chaos_run(["cluster", "up", str(scenario), "--backend", "compose", "--detach", "--out", str(out)],
                       state, timeout_s=180)
    run_dir = run_dir_of(out)
    project = json.loads((run_dir / "cluster.json").read_text())["compose_project"] \
        if (run_dir / "cluster.json").exists() else None
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        yield Cluster(state, run_dir)
    finally:
        if list_clusters(state):
            rmq_chaos_run(["cluster", "down", "--all"], state, timeout_s=180)
        rmq_chaos_run(["cleanup"], state, timeout_s=180)
        if project:
            assert_nothing_left(state, project)


def test_cluster_runs_as_containers_of_the_compose_file(cluster: Cluster) -> None:
    info = cluster.info
    assert info["backend"] == "compose" and info["image"] == "rmq-chaos/rocketmq-emulator:4.9.1"
    assert info["compose_file"] == str(REPO / "compose" / "rocketmq-4.yml")
    status = rmq_chaos_run(["cluster", "status"], cluster.state)
    assert status.stdout.count("running") == 3 and "compose" in status.stdout, status.stdout
    devices = set()
    for name in ("namesrv", "master", "slave"):
        node = cluster.node(name)
        ct = engine.container(node["container"])
        assert ct.status == "running" and ct.labels["com.docker.compose.project"] == cluster.project
        holder = info["netns"]["holder"]
        assert ct.attrs["HostConfig"]["NetworkMode"] == f"container:{holder}" == info["network_mode"]
        pid = ct.attrs["State"]["Pid"]
        assert Path(f"/proc/{pid}/ns/net").stat().st_ino == info["netns"]["inode"] != \
            Path("/proc/self/ns/net").stat().st_ino, "the run's own namespace, not the host's"
        assert node["pids"]["pidfile"] and Path(node["pids"]["pidfile"]).read_text().split()[0] == str(pid)
        assert f"/rmq-chaos/{cluster.project}/{ct.id}" in Path(f"/proc/{pid}/cgroup").read_text()
        assert "Uid:\t3000" in Path(f"/proc/{pid}/status").read_text()
        memory = node["cgroups"]["memory"]
        assert cgroupfs.is_ours(memory) and int(cgroupfs.read(memory, "memory.limit_in_bytes")) == \
            ct.attrs["HostConfig"]["Memory"]
        if name != "namesrv":
            mount = mounts.mount_at(node["store_mount"])
            assert mount.fstype == "ext4" and "errors=remount-ro" in mount.options
            devices.add(mount.source)
            binds = {m["Destination"]: m["Source"] for m in ct.attrs["Mounts"]}
            assert binds["/home/rocketmq/store"] == node["store_mount"]
    assert len(devices) == 2, "each broker's store is a filesystem of its own"
    slave_conf = Path(cluster.node("slave")["extras"]["conf"]).read_text()
    assert f"haMasterAddress={cluster.node('slave')['extras']['ha_relay']['listen']}" in slave_conf


def test_freeze_pauses_the_container(cluster: Cluster) -> None:
    applied = cluster.fault("apply", "freeze", "--node", "slave", "--id", "fz")
    assert _evidence(applied, "verify")["docker_status"] == "paused"
    assert _evidence(applied, "verify")["freezer"] == "FROZEN"
    reverted = cluster.fault("revert", "fz")
    assert _evidence(reverted, "revert")["after"]["docker_status"] == "running"


def test_kill_stops_the_container_and_revert_restarts_it(cluster: Cluster) -> None:
    before = cluster.node("slave")
    old = engine.container(before["container"]).attrs["State"]["Pid"]
    applied = cluster.fault("apply", "kill", "--node", "slave", "--id", "kl")
    assert _evidence(applied, "verify")["docker_status"] == "exited"
    assert _evidence(applied, "verify")["exit_code"] == 137
    reverted = cluster.fault("revert", "kl")
    ct = engine.container(before["container"])
    assert ct.status == "running" and ct.attrs["State"]["Pid"] != old
    assert _evidence(reverted, "revert")["pids_after"] == [ct.attrs["State"]["Pid"]]


def test_memory_pressure_lowers_the_limit_and_runs_a_hog_inside(cluster: Cluster) -> None:
    node = cluster.node("master")
    ct = engine.container(node["container"])
    limits = (ct.attrs["HostConfig"]["Memory"], ct.attrs["HostConfig"]["MemorySwap"])
    applied = cluster.fault("apply", "memory_pressure", "--node", "master", "--id", "mp",
                            "-p", "limit_bytes=64MiB", "-p", "hog_bytes=96MiB")
    evidence = _evidence(applied, "apply")
    assert evidence["limit"]["new"] == 64 << 20 and evidence["limit"]["kernel"] == str(64 << 20)
    assert evidence["hog"]["where"] == "inside the container (docker exec)"
    hog_cgroup = Path(f"/proc/{evidence['hog']['pid']}/cgroup").read_text()
    assert ct.id in hog_cgroup, "the hog runs in the container"
    pid = ct.attrs["State"]["Pid"]
    assert _evidence(applied, "verify")["pids"][str(pid)]["vm_swap"] > 0
    cluster.fault("revert", "mp")
    ct.reload()
    assert (ct.attrs["HostConfig"]["Memory"], ct.attrs["HostConfig"]["MemorySwap"]) == limits
    assert swap_bytes(pid)["vm_swap"] == 0


def test_disk_throttle_on_the_containers_blkio_cgroup(cluster: Cluster) -> None:
    applied = cluster.fault("apply", "disk_throttle", "--node", "master", "--id", "dt", "-p", "write_bps=4194304")
    assert _evidence(applied, "apply")["cgroup"] == cluster.node("master")["cgroups"]["blkio"]
    assert 0.8 <= _evidence(applied, "verify")["write_bps"]["ratio"] <= 1.2
    reverted = cluster.fault("revert", "dt")
    assert _evidence(reverted, "revert")["write_bps"]["ratio"] > 1.2


def test_readonly_store_and_revert_through_the_container(cluster: Cluster) -> None:
    node = cluster.node("slave")
    old = engine.container(node["container"]).attrs["State"]["Pid"]
    applied = cluster.fault("apply", "readonly_fs", "--node", "slave", "--id", "ro")
    assert _evidence(applied, "verify")["write_errno"] == "EROFS"
    reverted = cluster.fault("revert", "ro")
    steps = [(e["step"], e["status"]) for e in reverted if e["action"] == "step"]
    assert steps == [(s, st) for s in ("stop_node", "umount", "e2fsck", "mount", "start_node")
                     for st in ("started", "ok")]
    ct = engine.container(node["container"])
    assert ct.status == "running" and ct.attrs["State"]["Pid"] != old
    assert _evidence(reverted, "revert")["write_errno_after"] is None


def test_disk_freeze_of_the_store(cluster: Cluster) -> None:
    applied = cluster.fault("apply", "disk_freeze", "--node", "slave", "--id", "df")
    assert _evidence(applied, "verify")["blocked"] is True
    cluster.fault("revert", "df")


def test_ha_link_cut_through_the_relay(cluster: Cluster) -> None:
    applied = cluster.fault("apply", "ha_link", "--node", "slave", "--id", "hl", "-p", "mode=cut")
    assert _evidence(applied, "verify")["connect"] == "ConnectionRefusedError"
    reverted = cluster.fault("revert", "hl")
    assert _evidence(reverted, "revert")["connect_after"] == "connected"


def test_restart_runs_the_container_again(cluster: Cluster) -> None:
    applied = cluster.fault("apply", "restart", "--node", "master", "--id", "rs")
    evidence = _evidence(applied, "verify")
    assert evidence["new_pids"] and not set(evidence["old_pids"]) & set(evidence["new_pids"])


def test_holder_killed_with_a_fault_applied_then_cleanup_removes_everything(cluster: Cluster) -> None:
    cluster.fault("apply", "freeze", "--node", "slave", "--id", "fz2")
    os.kill(cluster.holder.pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while cluster.holder.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    report = rmq_chaos_run(["cleanup", "--json"], cluster.state, timeout_s=180)
    assert report.returncode == 0, report.stderr
    reverted = json.loads(report.stdout)["reverted"]
    kinds = [r["kind"] for r in reverted]
    assert kinds[0] == "fault:freeze" and "resource:compose_project" in kinds
    assert kinds[-1] == "resource:netns_holder", "the namespace holder goes last, after the containers using it"
    assert next(r for r in reverted if r["kind"] == "fault:freeze")["undo"][0]["result"] == "unpaused"
    assert_nothing_left(cluster.state, cluster.project)
    ready = [e for e in events(cluster.run_dir) if e["event"] == "cluster_ready"]
    assert ready and ready[0]["backend"] == "compose"


SCENARIO_5X = """\
name: compose-5x
cluster:
  version: "5.3.0"
  store_size: 64MiB
  broker:
    common: {mappedFileSizeCommitLog: 4194304, totalReplicas: 2, inSyncReplicas: 2}
phases: [{name: idle, duration: 1s}]
"""


def test_5x_cluster_from_the_5x_file_and_cluster_down(tmp_path: Path, test_image: str) -> None:
    """5.3.0 runs from compose/rocketmq-5.yml with the 4.x semantics its scenario asks for; `cluster down` (the
    holder's SIGTERM) takes everything away."""
    state, out = tmp_path / "state", tmp_path / "runs"
    (tmp_path / "s.yaml").write_text(SCENARIO_5X)
    up = rmq_chaos_run(["cluster", "up", str(tmp_path / "s.yaml"), "--backend", "compose", "--detach", "--out",
                        str(out)], state, timeout_s=180)
    project = project_name(run_dir_of(out).name)
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        info = json.loads((run_dir_of(out) / "cluster.json").read_text())
        assert info["compose_file"] == str(REPO / "compose" / "rocketmq-5.yml")
        assert info["image"] == "rmq-chaos/rocketmq-emulator:5.3.0"
        for node in ("master", "slave"):
            assert {k: info["effective_config"][node][k] for k in ("totalReplicas", "inSyncReplicas")} == {
                "totalReplicas": "2", "inSyncReplicas": "2"}
        down = rmq_chaos_run(["cluster", "down"], state, timeout_s=180)
        assert down.returncode == 0, down.stderr
    finally:
        if list_clusters(state):
            rmq_chaos_run(["cluster", "down", "--all"], state, timeout_s=180)
        rmq_chaos_run(["cleanup"], state, timeout_s=180)
    assert_nothing_left(state, project)
