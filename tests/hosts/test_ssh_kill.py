"""The control node dies (SIGKILL of `rmq-chaos run`) while faults are in effect on two hosts (a frozen master, a
partitioned slave):

- without anything else, each host's agent reverts its faults itself: the master runs again and the slave's host
  has no chain of ours, within the lease (10 s) and the revert (after a SIGKILL the SSH channel closes and the agents
  revert on its EOF at once; the lease is the bound when the control node hangs instead: benchmarks/hosts_kill.py
  --hang);
- then `rmq-chaos cleanup --hosts FILE` exits 0 and nothing of the run is left on any host: no process of ours,
  mount, loop device, cgroup, swap file, iptables chain or qdisc (`faults.leftovers` over each host's journal)."""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import REPO
from runsupport import events

pytestmark = pytest.mark.root
START_S = 240
LEASE_BOUND_S = 60
"""The lease (10 s) plus the reverts (a thaw, an iptables chain removed) on a busy machine: generous on purpose."""
SCENARIO = """\
name: killed-on-hosts
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
  - name: faulted
    duration: 300s
    faults:
      - {id: stopped, kind: freeze, target: master}
      - {id: cut, kind: partition, target: slave, params: {peers: [master]}}
readback: {enabled: false}
"""


@pytest.fixture
def short_tmp():
    """A short $TMPDIR for the run (a Unix socket path has at most 107 bytes; pytest's tmp_path is long)."""
    d = Path(tempfile.mkdtemp(prefix="rk-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _start_and_kill(cluster, tmp_path: Path, short_tmp: Path) -> tuple[Path, Path]:
    scenario = tmp_path / "killed.yaml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    state, out = tmp_path / "state", tmp_path / "runs"
    err = tmp_path / "run.stderr"
    with err.open("wb") as sink:  # the run's ssh control sockets (rmq-ssh-*) go to `short_tmp`: the test finds them
        proc = cluster.rmq_chaos(["run", str(scenario), "--out", str(out), "--hosts", str(cluster.inventory),
                                  "--no-report"], state, env_extra={"TMPDIR": str(short_tmp)}, stderr=sink,
                                 stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + START_S
        verified: set[str] = set()
        while verified != {"stopped", "cut"}:
            assert proc.poll() is None, f"rmq-chaos exited early with {proc.returncode}: {err.read_text()[-2000:]}"
            assert time.monotonic() < deadline, "the faults were not verified in time"
            runs = list(out.iterdir()) if out.exists() else []
            if runs and (runs[0] / "events.jsonl").exists():
                verified = {e["fault_id"] for e in events(runs[0]) if e["event"] == "fault"
                            and e["action"] == "verify" and e["status"] == "ok"}
            time.sleep(0.2)
        # checked before the kill: after it the agents revert at once (the channel's EOF)
        assert _master_frozen(cluster, runs[0]) and _chain_left(cluster, "n3"), "the faults were not in effect"
        assert _ssh_masters(short_tmp), "no ssh master connection found for the run"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    return next(out.iterdir()), state


def _ssh_masters(short_tmp: Path) -> list[int]:
    """The run's OpenSSH master connections: processes titled `ssh: <its control dir>/cm-<host> [mux]`."""
    mine = str(short_tmp)
    out = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and mine in (proc / "cmdline").read_bytes().decode(errors="replace"):
                out.append(int(proc.name))
        except OSError:
            continue
    return out


def _leftovers(cluster, name: str) -> list[str]:
    """What `faults.leftovers` finds of the host's journal, looked at from inside the host's network namespace."""
    work = cluster.workdir(name)
    code = ("import json, sys; from faults.leftovers import scan_leftovers; "
            f"print(json.dumps(scan_leftovers({str(work / 'state')!r}, [{str(work)!r}])))")
    proc = cluster.hosts.run(name, [sys.executable, "-c", code], text=True, cwd=REPO,
                             env={"PYTHONPATH": str(REPO), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _master_frozen(cluster, run_dir: Path) -> bool:
    info = json.loads((run_dir / "cluster.json").read_text())
    pid = next(n["pid"] for n in info["nodes"] if n["name"] == "master")
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False


def _chain_left(cluster, host: str) -> bool:
    rules = cluster.hosts.run(host, ["iptables-save"], text=True).stdout
    return "RMQ-" in rules


def _cleanup(cluster, tmp_path: Path, state: Path) -> str:
    proc = cluster.rmq_chaos(["cleanup", "--hosts", str(cluster.inventory)], state, stdout=subprocess.PIPE,
                             text=True)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    return out


@pytest.mark.long
def test_the_agents_revert_their_faults_when_the_control_node_is_gone(cluster, tmp_path: Path, short_tmp: Path) -> None:
    run_dir, state = _start_and_kill(cluster, tmp_path, short_tmp)
    killed = time.monotonic()
    while _master_frozen(cluster, run_dir) or _chain_left(cluster, "n3"):
        assert time.monotonic() - killed < LEASE_BOUND_S, "a fault outlived its control node past the bound"
        time.sleep(0.2)
    while _ssh_masters(short_tmp):  # their sessions ended with the killed process; ControlPersist (10 s) then ends them
        assert time.monotonic() - killed < LEASE_BOUND_S, f"ssh master connections left: {_ssh_masters(short_tmp)}"
        time.sleep(0.2)
    _cleanup(cluster, tmp_path, state)
    for host in ("n1", "n2", "n3", "n4"):
        assert _leftovers(cluster, host) == [], host


@pytest.mark.long
def test_cleanup_hosts_right_after_the_kill_leaves_nothing(cluster, tmp_path: Path, short_tmp: Path) -> None:
    run_dir, state = _start_and_kill(cluster, tmp_path, short_tmp)
    out = _cleanup(cluster, tmp_path, state)
    assert "reverted" in out
    for host in ("n1", "n2", "n3", "n4"):
        assert _leftovers(cluster, host) == [], host
    assert not _master_frozen(cluster, run_dir) and not _chain_left(cluster, "n3")
    again = _cleanup(cluster, tmp_path, state)
    assert "0 reverted, 0 failed" in again or "nothing of rmq-chaos" in again
