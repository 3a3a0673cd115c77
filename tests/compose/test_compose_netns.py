"""A compose run lives in a network namespace of its own (harness/backends/compose/netns.py): while `rmq-chaos run`
runs, `ss -ltnp` in the host's namespace shows no listener of the run (no process of the run, none of its ports),
and in the run's namespace, which has only `lo`, every listener is on 127.0.0.0/8 or a wildcard address and every
port of the run listens there. Under host networking (the backend before this namespace) the run's ports were
listeners of the host's namespace, so the first check fails there; a broker that bound an interface of the host
would fail it too. Afterwards the holder container is gone with everything else."""
from __future__ import annotations

import ipaddress
import json
import re
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from compose_support import assert_nothing_left, rmq_chaos, rmq_chaos_run

from faults.docker import engine
from faults.docker.ops import PROJECT_LABEL
from harness.backends.compose.netns import HOLDER_LABEL, STATE_LABEL

pytestmark = [pytest.mark.root, pytest.mark.docker]
SCENARIO = """\
name: compose-netns
cluster:
  version: "4.9.1"
  store_size: 64MiB
  ha_relay: always
  broker:
    common: {mappedFileSizeCommitLog: 4194304}
load:
  model: closed
  clients:
    - {name: flood, users: 2, timeout: 3s, message_size: 1000B}
phases: [{name: steady, duration: 20s}]
"""
READY_TIMEOUT_S = 180.0
RUN_TIMEOUT_S = 300.0
LISTENER = re.compile(r"^LISTEN\s+\d+\s+\d+\s+(?P<addr>\S+):(?P<port>\d+)\s+\S+\s*(?P<users>.*)$")


def listeners(netns_pid: int | None = None) -> list[dict]:
    """`ss -ltnpH` in the host's namespace, or in that of process `netns_pid`: address, port, pids."""
    argv = ["ss", "-ltnpH"]
    if netns_pid is not None:
        argv = ["nsenter", f"--net=/proc/{netns_pid}/ns/net", "--", *argv]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=30).stdout
    found = []
    for line in out.splitlines():
        m = LISTENER.match(line.strip())
        assert m, f"unexpected ss line: {line!r}"
        addr = m["addr"].strip("[]").split("%")[0]
        found.append({"addr": addr, "port": int(m["port"]), "line": line.strip(),
                      "pids": {int(p) for p in re.findall(r"pid=(\d+)", m["users"])}})
    return found


def loopback_or_wildcard(addr: str) -> bool:
    if addr == "*":
        return True
    ip = ipaddress.ip_address(addr)
    return ip.is_loopback or ip.is_unspecified


def _wait_for_cluster(out: Path, proc: subprocess.Popen) -> tuple[Path, dict]:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline and proc.poll() is None:
        for d in out.glob("*/cluster.json"):
            return d.parent, json.loads(d.read_text())
        time.sleep(0.2)
    raise AssertionError(f"no cluster.json within {READY_TIMEOUT_S:.0f} s (run exit {proc.poll()})")


def test_nothing_of_a_compose_run_listens_outside_its_namespace(tmp_path: Path, test_image: str) -> None:
    state, out = tmp_path / "state", tmp_path / "runs"
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    proc = rmq_chaos(["run", str(scenario), "--backend", "compose", "--no-report", "--out", str(out)], state,
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    info: dict = {}
    try:
        run_dir, info = _wait_for_cluster(out, proc)
        holder = engine.container(info["netns"]["holder"])
        assert holder.labels[HOLDER_LABEL] == "holder" and holder.labels[STATE_LABEL] == str(state.resolve())
        assert holder.attrs["HostConfig"]["NetworkMode"] == "none"
        holder_pid = holder.attrs["State"]["Pid"]
        ns = Path(f"/proc/{holder_pid}/ns/net").stat().st_ino
        assert ns != Path("/proc/self/ns/net").stat().st_ino
        links = subprocess.run(["nsenter", f"--net=/proc/{holder_pid}/ns/net", "--", "ip", "-o", "link", "show"],
                               capture_output=True, text=True, check=True).stdout
        assert [line.split(":")[1].strip() for line in links.splitlines()] == ["lo"], links
        assert info["netns"]["interfaces"] == ["lo"] and info["netns"]["inode"] == ns

        containers = engine.client().containers.list(filters={"label": f"{PROJECT_LABEL}={info['compose_project']}"})
        assert len(containers) == 3
        run_pids = {p.pid for p in psutil.Process(proc.pid).children(recursive=True)} | {proc.pid}
        for ct in containers:
            assert ct.attrs["HostConfig"]["NetworkMode"] in (f"container:{holder.id}", f"container:{holder.name}")
            assert Path(f"/proc/{ct.attrs['State']['Pid']}/ns/net").stat().st_ino == ns
            run_pids |= {int(row[0]) for row in ct.top(ps_args="-eo pid")["Processes"]}
        assert Path(f"/proc/{proc.pid}/ns/net").stat().st_ino == ns, "the harness runs in the same namespace"
        ports = {int(n["addr"].rpartition(":")[2]) for n in info["nodes"]}
        ports |= {int(info["effective_config"][b]["haListenPort"]) for b in ("master", "slave")}

        on_host = listeners()
        inside = listeners(holder_pid)
        ours_on_host = [x["line"] for x in on_host if x["pids"] & run_pids or x["port"] in ports]
        assert not ours_on_host, f"listeners of the run in the host's namespace: {ours_on_host}"
        assert ports <= {x["port"] for x in inside}, f"the run's ports listen in its namespace: {inside}"
        outside = [x["line"] for x in inside if not loopback_or_wildcard(x["addr"])]
        assert not outside, f"listeners not on loopback: {outside}"
        assert any(x["pids"] & run_pids for x in inside if x["port"] not in ports), "the HA relay listens inside"

        output, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
        assert proc.returncode == 0, output[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        rmq_chaos_run(["cleanup"], state, timeout_s=180)
    assert_nothing_left(state, info["compose_project"])
    assert engine.container_or_none(info["netns"]["holder"]) is None
