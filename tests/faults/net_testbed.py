"""Hosts for the network fault tests: namespace hosts h1, h2, h3 (`tests/hosts/netns_hosts.py`) under a parent
namespace that plays the control node (10.<net>.0.1), node n<i> on host h<i>, a probe sink
(`python -m faults.net_probe sink`) on `PORT` of every host and of the control node, and drivers that run faults
inside a host's namespace (`net_driver.py`), as the host agent runs them on its host. Every process it starts is
ended by its pid, then the namespaces are deleted."""
from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hosts"))

import netns_hosts  # noqa: E402

from faults.net_probe import connect_all, transfer_rate  # noqa: E402

TEST_ROOT = Path("/tmp/rmq-chaos-tests")
REPO = Path(__file__).resolve().parents[2]
DRIVER = str(Path(__file__).with_name("net_driver.py"))
PY = sys.executable
PORT = 7000
CONTROL = "ctl"


CLONE_NEWNET = 0x40000000


def in_netns(path: str, fn: Callable[[], Any]) -> Any:
    """`fn()` in a thread of this process that first joins the network namespace at `path` (setns is per thread;
    its sockets, and the threads it starts, stay there). Saves starting a Python child per probe."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            with open(path) as f:
                if ctypes.CDLL(None, use_errno=True).setns(f.fileno(), CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns {path}")
            box["result"] = fn()
        except BaseException as e:  # noqa: BLE001 -- handed to the caller
            box["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["result"]


def _no_comments(text: str) -> str:
    return "\n".join(x for x in text.splitlines() if not x.startswith("#"))


class Driver:
    """A `net_driver.py` process in a host's namespace: `results` by fault id once it is ready."""

    def __init__(self, argv: list[str], spec: dict) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)
        self.proc.stdin.write(json.dumps(spec) + "\n")
        self.proc.stdin.flush()
        self.results: dict[str, dict] = {}
        self._read_until_ready()

    def _read_until_ready(self) -> None:
        for line in self.proc.stdout:
            out = json.loads(line)
            if out.get("ready"):
                return
            self.results[out["fault_id"]] = out
        raise AssertionError(f"driver ended (exit {self.proc.wait()}) before it was ready: {self.results}")

    def revert(self) -> dict[str, dict]:
        self.proc.stdin.write("revert\n")
        self.proc.stdin.flush()
        reverted = {(out := json.loads(line))["fault_id"]: out for line in self.proc.stdout}
        assert self.proc.wait(timeout=30) == 0
        return reverted

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def end(self) -> None:
        if self.proc.poll() is None:
            self.kill()


class NetBed(netns_hosts.TestHosts):
    """TestHosts with a sink on every host and on the control node, and the drivers and probes below."""

    def __init__(self, base: Path, names: tuple[str, ...] = ("h1", "h2", "h3"), sinks: bool = True) -> None:
        super().__init__(list(names), base)
        self.sinks = sinks
        self.procs: list[subprocess.Popen] = []
        self.drivers: list[Driver] = []

    def open(self) -> None:
        super().open()
        if self.sinks:
            self._start_sinks()

    def end_drivers(self) -> None:
        for d in self.drivers:
            d.end()
        self.drivers.clear()

    def close(self) -> None:
        self.end_drivers()
        for p in self.procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
        super().close()

    @property
    def control(self) -> str:
        return self.control_addr

    def addr(self, host: str) -> str:
        return self.control if host == CONTROL else self.addrs[host]

    def argv(self, host: str, argv: list[str]) -> list[str]:
        return self.parent_argv(argv) if host == CONTROL else ["ip", "netns", "exec", self.ns[host], *argv]

    def _start_sinks(self) -> None:
        for host in [*self.names, CONTROL]:
            argv = self.argv(host, [PY, "-m", "faults.net_probe", "sink", "--listen", f"{self.addr(host)}:{PORT}"])
            self.procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=REPO))
        for p in self.procs:
            assert json.loads(p.stdout.readline())["listen"].endswith(f":{PORT}")

    def out(self, host: str, argv: list[str]) -> str:
        """What `argv` prints, run inside host `host`'s namespace (or the control node's)."""
        return subprocess.run(self.argv(host, argv), check=True, capture_output=True, text=True, cwd=REPO).stdout

    def target(self, on: str = "h1", peers: dict[str, str] | None = None, sinks: bool = True) -> dict:
        """NodeTarget JSON of node n<i> on host `on`: every other host's node as a peer, the control node and the
        host's own address kept, probe ports on every peer and on the control node, the peers' sinks."""
        peers = peers or {f"n{h[1:]}": self.addr(h) for h in self.names if h != on}
        extras = {"peers": peers, "keep": [self.control, self.addr(on)],
                  "probe_ports": {**{n: PORT for n in peers}, self.control: PORT},
                  "sinks": {n: f"{a}:{PORT}" for n, a in peers.items()} if sinks else {}}
        return {"name": f"n{on[1:]}", "role": "master", "run_id": "net-test", "pids": {"static": []},
                "extras": extras}

    def driver(self, on: str, state: Path, faults: list[dict], *, target: dict | None = None, hold: bool = True,
               verify: bool = True) -> Driver:
        """Faults applied (and verified) by a driver in host `on`'s namespace, journaled in `state`."""
        spec = {"state": str(state), "target": target or self.target(on), "faults": faults, "hold": hold,
                "verify": verify}
        d = Driver(self.argv(on, [PY, DRIVER]), spec)
        self.drivers.append(d)
        return d

    def ns_path(self, host: str) -> str:
        return f"/run/netns/{self.parent_ns if host == CONTROL else self.ns[host]}"

    def connect(self, src: str, dsts: list[str], port: int = PORT) -> dict[str, str]:
        """TCP connects from host `src` to each host in `dsts` (0.5 s timeout): {dst: result}."""
        results = in_netns(self.ns_path(src), lambda: connect_all([(self.addr(d), port) for d in dsts], 0.5))
        return dict(zip(dsts, results, strict=True))

    def rate(self, src: str, dst: str, seconds: float = 0.8) -> dict:
        """A transfer from host `src` to the sink on host `dst`, measured by the sink."""
        return in_netns(self.ns_path(src), lambda: transfer_rate(self.addr(dst), PORT, seconds))

    def snapshot(self, host: str) -> str:
        """The host's iptables rules and qdiscs, as the tools print them (without their timestamp comments)."""
        return _no_comments(self.out(host, ["iptables-save"])) + "\n" + self.out(host, ["tc", "qdisc", "show"])

    def cleanup_in(self, host: str, state: Path) -> dict:
        """`faults.cleanup.cleanup(state)` run by a process inside host `host`'s namespace: its report."""
        code = ("import json, sys; from faults.cleanup import cleanup; "
                "print(json.dumps(cleanup(sys.argv[1]).to_dict(), default=str))")
        return json.loads(self.out(host, [PY, "-c", code, str(state)]))


@contextmanager
def shared_bed() -> Iterator[NetBed]:
    """One NetBed for a test module (its namespaces take seconds to make on a busy machine), in a base dir of its
    own under the fault tests' root; each test journals in its own state dir and must leave the hosts as it found
    them."""
    base = TEST_ROOT / f"net-{uuid.uuid4().hex[:10]}"
    try:
        with NetBed(base / "hosts") as bed:
            yield bed
    finally:
        shutil.rmtree(base, ignore_errors=True)


def machine_snapshot() -> str:
    """This machine's own namespace's iptables rules and qdiscs (never touched by the tests)."""
    ipt = subprocess.run(["iptables-save"], check=True, capture_output=True, text=True).stdout
    tc = subprocess.run(["tc", "qdisc", "show"], check=True, capture_output=True, text=True).stdout
    return _no_comments(ipt) + "\n" + tc
