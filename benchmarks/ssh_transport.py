"""How long a small remote command (`true`) takes through each way the control node could talk to a host: the
harness's own SSH layer (`harness.hosts.ssh.SshHost`: the OpenSSH client, one multiplexed ControlMaster connection),
a fresh `ssh` per command (a full handshake each time), and, when they are installed, paramiko and asyncssh (one
connection, a new channel per command). Against a real OpenSSH sshd in a network namespace host
(tests/hosts/netns_hosts.py); the measuring runs in the hosts' parent namespace, the control node's. Prints the
connection's setup time and the median / p99 per command of each; no assertions (figures follow the machine's load).

    sudo .venv/bin/python benchmarks/ssh_transport.py [--commands 200] [--parallel 8]

paramiko's rate in parallel is not measured: channels opened from 8 threads at once on one paramiko client made no
progress in 10 minutes here (its exec_command from threads), so only its sequential times are printed.
paramiko and asyncssh are not the project's dependencies: `pip install paramiko asyncssh` into the venv to include
them; they are skipped (and said so) otherwise.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from support import REPO, not_root, pct

sys.path.insert(0, str(REPO / "tests" / "hosts"))

from netns_hosts import TestHosts  # noqa: E402

from harness.hosts.inventory import Host  # noqa: E402
from harness.hosts.ssh import SshHost  # noqa: E402


def _times(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def _parallel(fn, n: int, width: int) -> float:
    """Commands per second with `width` commands in flight at once."""
    t = time.perf_counter()
    with ThreadPoolExecutor(width) as pool:
        list(pool.map(lambda _: fn(), range(n)))
    return n / (time.perf_counter() - t)


def measure_openssh(host: Host, known_hosts: str, n: int, width: int) -> dict[str, dict]:
    control = Path(tempfile.mkdtemp(prefix="rmq-bench-ssh-"))
    found = {}
    with SshHost(host, control, known_hosts=known_hosts) as ssh:
        t = time.perf_counter()
        ssh.run(["true"])  # opens the ControlMaster connection
        setup = (time.perf_counter() - t) * 1000
        found["openssh multiplexed (SshHost)"] = {"setup_ms": setup, "ms": _times(lambda: ssh.run(["true"]), n),
                                                  "parallel_per_s": _parallel(lambda: ssh.run(["true"]), n, width)}
        opts = ssh.options()
        kept = [a for i, a in enumerate(opts) if not (a.startswith("Control") or opts[i + 1:i + 2] and
                                                       opts[i + 1].startswith("Control"))]
        fresh = ["ssh", *kept, "-o", "ControlMaster=no", "-o", "ControlPath=none", "-T", host.target, "true"]
        run = lambda: subprocess.run(fresh, check=True, capture_output=True)  # noqa: E731
        found["openssh fresh ssh per command"] = {"setup_ms": None, "ms": _times(run, n),
                                                  "parallel_per_s": _parallel(run, n, width)}
    return found


def measure_paramiko(host: Host, known_hosts: str, n: int, width: int) -> dict | None:
    try:
        import paramiko
    except ImportError:
        return None
    t = time.perf_counter()
    client = paramiko.SSHClient()
    client.load_host_keys(known_hosts)
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(host.address, port=host.port, username=host.user, key_filename=host.key_file,
                   look_for_keys=False, allow_agent=False)
    setup = (time.perf_counter() - t) * 1000

    def one() -> None:
        _, out, _ = client.exec_command("true")
        out.channel.recv_exit_status()
    try:
        return {"setup_ms": setup, "ms": _times(one, n), "parallel_per_s": None, "version": paramiko.__version__}
    finally:
        client.close()


def measure_asyncssh(host: Host, known_hosts: str, n: int, width: int) -> dict | None:
    try:
        import asyncssh
    except ImportError:
        return None

    async def go() -> dict:
        t = time.perf_counter()
        async with asyncssh.connect(host.address, port=host.port, username=host.user, client_keys=[host.key_file],
                                    known_hosts=known_hosts) as conn:
            setup = (time.perf_counter() - t) * 1000
            ms = []
            for _ in range(n):
                t = time.perf_counter()
                await conn.run("true", check=True)
                ms.append((time.perf_counter() - t) * 1000)
            sem = asyncio.Semaphore(width)

            async def bounded() -> None:
                async with sem:
                    await conn.run("true", check=True)
            t = time.perf_counter()
            await asyncio.gather(*(bounded() for _ in range(n)))
            return {"setup_ms": setup, "ms": ms, "parallel_per_s": n / (time.perf_counter() - t),
                    "version": asyncssh.__version__}
    return asyncio.run(go())


def measure(args: argparse.Namespace) -> None:
    """In the parent namespace: every transport against the host; JSON on stdout."""
    host = Host(name="h", address=args.address, key_file=args.key)
    found = measure_openssh(host, args.known_hosts, args.commands, args.parallel)
    for name, fn in (("paramiko", measure_paramiko), ("asyncssh", measure_asyncssh)):
        got = fn(host, args.known_hosts, args.commands, args.parallel)
        found[name + " (one connection, a channel per command)" if got else name + " (not installed)"] = got
    print(json.dumps(found))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=200)
    parser.add_argument("--parallel", type=int, default=8, help="commands in flight at once for the rate")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--address", help=argparse.SUPPRESS)
    parser.add_argument("--key", help=argparse.SUPPRESS)
    parser.add_argument("--known-hosts", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args)
        return 0
    if not_root("ssh_transport", "network namespaces and an sshd"):
        return 1
    base = Path(tempfile.mkdtemp(prefix="rmq-bench-ssh-"))
    with TestHosts(["h"], base, sshd=True) as hosts:
        kh = hosts.known_hosts_for(base / "known_hosts")
        proc = hosts.parent([sys.executable, __file__, "--measure", "--address", hosts.addr("h"), "--key",
                             str(hosts.user_key), "--known-hosts", str(kh), "--commands", str(args.commands),
                             "--parallel", str(args.parallel)], text=True, cwd=REPO)
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"{args.commands} x `true` on one sshd host (network namespace), sequential; rate with "
          f"{args.parallel} in flight")
    print(f"{'transport':48} {'setup ms':>9} {'median ms':>10} {'p99 ms':>8} {'cmds/s par':>11}")
    for name, r in found.items():
        if r is None:
            print(f"{name:48} {'-':>9}")
            continue
        setup = f"{r['setup_ms']:.1f}" if r["setup_ms"] is not None else "(each)"
        rate = f"{r['parallel_per_s']:.0f}" if r["parallel_per_s"] else "-"
        print(f"{name:48} {setup:>9} {statistics.median(r['ms']):>10.2f} {pct(r['ms'], 0.99):>8.2f} {rate:>11}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
