"""SSH to the hosts of an inventory through the OpenSSH client (`ssh`), one multiplexed connection per host
(ControlMaster): the first command opens it, later commands and the agent's channel ride on it without a new
handshake, and `close()` ends it. docs/hosts.md says why OpenSSH and not a Python library (measured there).

Host keys are checked against a known_hosts file (default: the user's `~/.ssh/known_hosts`); an unknown key is
refused, never accepted silently, unless `accept_new` (the `--accept-new-host-keys` flag) says so. Every failure
is `SshError` with one line naming the host: unreachable, the key refused, an unknown or changed host key.

    with SshHost(host, control_dir) as ssh:
        ssh.run(["uname", "-m"]).stdout
        proc = ssh.popen(["/opt/venv/bin/python", "-m", "harness.agent"])   # a channel: stdin/stdout pipes

Every `ssh` runs in a session of its own (and so does the master connection it forks): a Ctrl-C in the terminal or a
SIGTERM to the harness's process group reaches the harness alone, which then still has its channels to stop the
load on the hosts, fetch their rows, revert faults and take the nodes down (`harness.interrupts`).
"""
from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from harness.hosts.inventory import Host

KNOWN_HOSTS_ENV = "RMQ_CHAOS_KNOWN_HOSTS"
ACCEPT_NEW_ENV = "RMQ_CHAOS_ACCEPT_NEW_HOST_KEYS"
"""Set by the CLI's `--known-hosts FILE` and `--accept-new-host-keys` (so the run's child processes see them too);
the defaults of every `SshHost`."""
CONNECT_TIMEOUT_S = 10
ALIVE_INTERVAL_S = 2
ALIVE_COUNT = 3
"""An idle connection is declared dead after ALIVE_INTERVAL_S x ALIVE_COUNT seconds without an answer."""
PERSIST_S = 10
"""How long a master connection outlives its last session. A run keeps its agents' channels open on them, so this
is only how long they stay after the run's last command, or after the control node was killed (their sessions end
when the killed process's pipes close): a new command after a longer pause pays one handshake."""


SOCKET_PATH_MAX = 107
"""A Unix socket's path is at most 107 bytes (`sun_path`, less its NUL); ssh listens on `<ControlPath>.<16 random>`
before renaming it to the ControlPath."""
NAME_MAX_IN_PATH = 16


def make_control_dir() -> Path:
    """A new private directory for the master connections' sockets: under $TMPDIR, or under /tmp when $TMPDIR is
    too long a path for the sockets (ssh fails with "too long for Unix domain socket")."""
    base = Path(tempfile.gettempdir())
    longest = len(str(base)) + len("/rmq-ssh-12345678/cm-") + NAME_MAX_IN_PATH + len(".1234567890123456")
    return Path(tempfile.mkdtemp(prefix="rmq-ssh-", dir=base if longest <= SOCKET_PATH_MAX else "/tmp"))


class SshError(RuntimeError):
    """The host cannot be reached or used over SSH (one line naming it)."""


class SshHost:
    """SSH to one host (see the module docstring)."""

    def __init__(self, host: Host, control_dir: str | os.PathLike[str], *, known_hosts: str | None = None,
                 accept_new: bool | None = None) -> None:
        self.host = host
        self.control_dir = Path(control_dir)
        self.known_hosts = known_hosts or os.environ.get(KNOWN_HOSTS_ENV) or str(Path.home() / ".ssh" / "known_hosts")
        self.accept_new = accept_new if accept_new is not None else os.environ.get(ACCEPT_NEW_ENV) == "1"
        name = host.name if len(host.name) <= NAME_MAX_IN_PATH else hashlib.sha256(host.name.encode()).hexdigest()[:16]
        self.control_path = self.control_dir / f"cm-{name}"

    # --- the command line -------------------------------------------------------------------------------------

    def options(self) -> list[str]:
        h = self.host
        opts = ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}",
                "-o", f"StrictHostKeyChecking={'accept-new' if self.accept_new else 'yes'}",
                "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
                "-o", "ControlMaster=auto", "-o", f"ControlPath={self.control_path}",
                "-o", f"ControlPersist={PERSIST_S}", "-o", f"ServerAliveInterval={ALIVE_INTERVAL_S}",
                "-o", f"ServerAliveCountMax={ALIVE_COUNT}", "-o", "LogLevel=ERROR", "-p", str(h.port)]
        if h.key_file:
            opts += ["-i", h.key_file, "-o", "IdentitiesOnly=yes"]
        return opts

    def argv(self, command: list[str], *, tty: bool = False) -> list[str]:
        remote = shlex.join(command)
        if self.host.become:
            remote = f"sudo -n -u {shlex.quote(self.host.become_user)} -- {remote}"
        return ["ssh", *self.options(), *(["-t"] if tty else ["-T"]), self.host.target, remote]

    # --- using it ---------------------------------------------------------------------------------------------

    def run(self, command: list[str], *, input: bytes | str | None = None, timeout: float = 60.0,
            check: bool = True) -> subprocess.CompletedProcess:
        """Run `command` on the host; `SshError` (one line) when ssh itself fails, or the command when `check`."""
        self.control_dir.mkdir(parents=True, exist_ok=True)
        text = not isinstance(input, bytes)
        try:
            proc = subprocess.run(self.argv(command), input=input, capture_output=True, timeout=timeout, text=text,
                                  check=False, start_new_session=True)
        except subprocess.TimeoutExpired:
            raise SshError(f"host {self.host.name} ({self.host.address}): {shlex.join(command)[:80]} did not finish "
                           f"within {timeout:g} s") from None
        if proc.returncode == 255:
            raise SshError(self.explain(proc.stderr if text else proc.stderr.decode(errors="replace")))
        if check and proc.returncode != 0:
            err = proc.stderr if text else proc.stderr.decode(errors="replace")
            raise SshError(f"host {self.host.name}: {shlex.join(command)[:80]} exited {proc.returncode}: "
                           f"{_last_line(err)}")
        return proc

    def popen(self, command: list[str], **kw) -> subprocess.Popen:
        """A long-lived channel running `command` (stdin/stdout pipes unless given): the agent's."""
        self.control_dir.mkdir(parents=True, exist_ok=True)
        kw.setdefault("stdin", subprocess.PIPE)
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("start_new_session", True)
        return subprocess.Popen(self.argv(command), **kw)

    def put(self, data: bytes, remote_path: str, mode: str = "0644", timeout: float = 300.0) -> None:
        """Write `data` to `remote_path` on the host (atomically: a temporary name, then a rename)."""
        tmp = f"{remote_path}.part"
        script = (f"umask 077 && cat > {shlex.quote(tmp)} && chmod {mode} {shlex.quote(tmp)} && "
                  f"mv -f {shlex.quote(tmp)} {shlex.quote(remote_path)}")
        self.run(["sh", "-c", script], input=data, timeout=timeout)

    def explain(self, stderr: str) -> str:
        """ssh's own failure as one line naming the host and what to do."""
        h, err = self.host, stderr.strip()
        where = f"host {h.name} ({h.user}@{h.address}:{h.port})"
        if "Host key verification failed" in err or "REMOTE HOST IDENTIFICATION HAS CHANGED" in err \
                or "No ED25519 host key is known" in err or "host key for" in err.lower():
            return (f"{where}: its host key is not in {self.known_hosts} (or has changed); check it and add it, or "
                    "pass --accept-new-host-keys to accept keys of hosts seen for the first time")
        if "Permission denied" in err:
            return f"{where}: the key was refused (Permission denied); check ansible_user and ansible_ssh_private_key_file"
        if "Connection refused" in err:
            return f"{where}: connection refused (no sshd on port {h.port})"
        if "timed out" in err or "No route to host" in err or "Network is unreachable" in err \
                or "Could not resolve" in err:
            return f"{where}: unreachable ({_last_line(err)})"
        return f"{where}: ssh failed: {_last_line(err) or 'no message'}"

    def close(self) -> None:
        """End the multiplexed connection (no-op when none is open)."""
        if self.control_path.exists():
            subprocess.run(["ssh", *self.options(), "-O", "exit", self.host.target], capture_output=True,
                           timeout=15, check=False, start_new_session=True)

    def __enter__(self) -> SshHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""
