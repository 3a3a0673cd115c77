"""Test hosts on one machine: a parent network namespace of the test's own with a bridge, and one namespace per
"host" joined to it by a veth pair, each with its own address (10.<net>.0.<10+i>/24; the parent has .1, the control
node's address). Nothing of it exists in the machine's own namespace; `close()` (or the context manager's end) ends
every process it started and deletes every namespace it made, by name.

With `sshd=True` each host runs a real OpenSSH sshd (Debian's openssh-server) on port 22 of its address, with a
host key of its own and one user key accepted for root; `known_hosts` lists every host's key (`known_hosts_for`
writes it), so the harness can reach hosts as an operator would. Hosts share this machine's filesystems: give each
its own work directory (the inventory's `rmq_chaos_workdir`).

    with TestHosts(["n1", "n2"], sshd=True) as hosts:
        hosts.run("n1", ["ip", "-br", "addr"])          # a command inside host n1's namespace
        hosts.parent(["ssh", ..., "root@" + hosts.addr("n1"), "true"])  # from the control node's namespace
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"
PREFIX_LEN = 24


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


class TestHosts:
    """Network namespaces as hosts under a parent namespace; see the module docstring."""

    def __init__(self, names: list[str], base: Path, *, sshd: bool = False, net: int | None = None) -> None:
        self.names = list(names)
        self.base = Path(base)
        self.tag = secrets.token_hex(3)
        self.net = net if net is not None else 100 + int(self.tag, 16) % 150
        self.parent_ns = f"rmqp-{self.tag}"
        self.ns = {n: f"rmqh-{self.tag}-{i}" for i, n in enumerate(self.names)}
        self.addrs = {n: f"10.{self.net}.0.{10 + i}" for i, n in enumerate(self.names)}
        self.control_addr = f"10.{self.net}.0.1"
        self.sshd = sshd
        self.sshd_pids: dict[str, int] = {}
        self.user_key = self.base / "id_ed25519"
        self._made: list[str] = []

    # --- making and ending ------------------------------------------------------------------------------------

    def __enter__(self) -> TestHosts:
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        _ip("netns", "add", self.parent_ns)
        self._made.append(self.parent_ns)
        self.parent(["ip", "link", "set", "lo", "up"])
        self.parent(["ip", "link", "add", "br0", "type", "bridge"])
        self.parent(["ip", "addr", "add", f"{self.control_addr}/{PREFIX_LEN}", "dev", "br0"])
        self.parent(["ip", "link", "set", "br0", "up"])
        for i, name in enumerate(self.names):
            ns = self.ns[name]
            _ip("netns", "add", ns)
            self._made.append(ns)
            self.run(name, ["ip", "link", "set", "lo", "up"])
            _ip("link", "add", f"v{self.tag}{i}", "netns", self.parent_ns, "type", "veth", "peer", "name", "eth0",
                "netns", ns)
            self.parent(["ip", "link", "set", f"v{self.tag}{i}", "master", "br0", "up"])
            self.run(name, ["ip", "addr", "add", f"{self.addrs[name]}/{PREFIX_LEN}", "dev", "eth0"])
            self.run(name, ["ip", "link", "set", "eth0", "up"])
        if self.sshd:
            self._start_sshd()

    def close(self) -> None:
        for name, pid in list(self.sshd_pids.items()):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            self.sshd_pids.pop(name)
        for ns in reversed(self._made):
            for pid in _pids_in(ns):  # anything a test left running in the namespace: ended by its pid
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)
        self._made.clear()

    # --- using them -------------------------------------------------------------------------------------------

    def addr(self, name: str) -> str:
        return self.addrs[name]

    def run(self, name: str, argv: list[str], **kw) -> subprocess.CompletedProcess:
        """`argv` inside host `name`'s network namespace (check=True, output captured unless given)."""
        kw.setdefault("check", True)
        kw.setdefault("capture_output", True)
        return subprocess.run(self.host_argv(name, argv), **kw)

    def host_argv(self, name: str, argv: list[str]) -> list[str]:
        """`argv` in host `name`'s network namespace only: `nsenter --net`, not `ip netns exec`, which also makes a
        mount namespace with a fresh /sys (no cgroup hierarchies there: a host must see the machine's)."""
        return ["nsenter", f"--net=/run/netns/{self.ns[name]}", *argv]

    def parent(self, argv: list[str], **kw) -> subprocess.CompletedProcess:
        """`argv` in the parent namespace: where the control node (the harness) runs."""
        kw.setdefault("check", True)
        kw.setdefault("capture_output", True)
        return subprocess.run(self.parent_argv(argv), **kw)

    def parent_argv(self, argv: list[str]) -> list[str]:
        return ["nsenter", f"--net=/run/netns/{self.parent_ns}", *argv]

    # --- sshd ---------------------------------------------------------------------------------------------------

    def _start_sshd(self) -> None:
        if not os.access(SSHD, os.X_OK):
            raise RuntimeError(f"{SSHD} is missing (Debian's openssh-server; setup.sh installs it)")
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.user_key)], check=True)
        for name in self.names:
            d = self.base / f"sshd-{name}"
            d.mkdir(mode=0o700)
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "host_key")], check=True)
            shutil.copy(f"{self.user_key}.pub", d / "authorized_keys")
            (d / "sshd_config").write_text(
                f"Port 22\nListenAddress {self.addrs[name]}\nHostKey {d / 'host_key'}\n"
                f"AuthorizedKeysFile {d / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
                f"PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                f"PidFile {d / 'sshd.pid'}\nMaxSessions 64\nMaxStartups 64\nLogLevel VERBOSE\n", encoding="utf-8")
            self.run(name, [SSHD, "-f", str(d / "sshd_config"), "-E", str(d / "sshd.log")])
            self.sshd_pids[name] = _wait_pid(d / "sshd.pid")

    def host_key_line(self, name: str) -> str:
        key = (self.base / f"sshd-{name}" / "host_key.pub").read_text().split()
        return f"{self.addrs[name]} {key[0]} {key[1]}"

    def known_hosts_for(self, path: Path, names: list[str] | None = None) -> Path:
        """A known_hosts file with the host keys of `names` (default: all hosts)."""
        path.write_text("".join(self.host_key_line(n) + "\n" for n in (names or self.names)), encoding="utf-8")
        return path


def _wait_pid(path: Path, timeout_s: float = 10.0) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            return int(path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            time.sleep(0.02)
    raise RuntimeError(f"sshd wrote no pid file {path}")


def _pids_in(ns: str) -> list[int]:
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, check=False).stdout
    return [int(p) for p in out.split()]
