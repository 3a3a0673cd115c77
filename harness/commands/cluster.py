"""`rmq-chaos cluster up|down|status`: a cluster of a scenario without load or faults, for manual work (`rmq-chaos
fault ...` acts on it through its state file).

`up SCENARIO` stands it up and holds it in this process until Ctrl-C/SIGTERM (`--detach`: in a background process
of its own, this command returns once the cluster is ready). The process that holds a cluster owns its journal
entries, so the cluster lives exactly as long as that process: `down [ID]` sends it SIGTERM and waits; when the
holder is already dead, `down` runs the journal clean-up instead. `status` lists the clusters of the state dir."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time

NAME = "cluster"
HELP = "stand a scenario's cluster up (held until Ctrl-C or `cluster down`), take it down, or show its status"
DOWN_TIMEOUT_S = 120.0
EXIT_INVALID = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = sub.add_parser("up", help="stand the cluster of a scenario up and hold it")
    up.add_argument("scenario", metavar="SCENARIO")
    up.add_argument("--out", default="runs", metavar="DIR", help="where its run directory goes (default: runs)")
    up.add_argument("--detach", action="store_true", help="hold it in a background process; return when ready")
    from harness.commands.run import add_backend_arguments
    add_backend_arguments(up)
    down = sub.add_parser("down", help="take a held cluster down")
    down.add_argument("cluster_id", nargs="?", metavar="ID", help="cluster id (default: the only one)")
    down.add_argument("--all", action="store_true", help="every cluster of the state dir")
    sub.add_parser("status", help="clusters of the state dir: holder, nodes, broker figures")


def run(args: argparse.Namespace) -> int:
    return {"up": _up, "down": _down, "status": _status}[args.action](args)


def _up(args: argparse.Namespace) -> int:
    from harness.commands.run import scenario_runs

    runs = scenario_runs(args.scenario)
    if runs is None:
        return EXIT_INVALID
    if len(runs) != 1:
        print(f"{args.scenario}: a matrix of {len(runs)} runs; `cluster up` takes a scenario of one", file=sys.stderr)
        return EXIT_INVALID
    from harness.backends.factory import BackendUnavailable, check, with_backend
    try:
        from harness.commands.run import apply_host_arguments

        apply_host_arguments(args)
        runs = [with_backend(runs[0], args.backend, args.image, args.program, args.hosts)]
        check(runs[0])
    except BackendUnavailable as err:
        print(f"{args.scenario}: {err}", file=sys.stderr)
        return EXIT_INVALID
    from harness.commands.run import isolate, release_netns
    code = isolate(args.scenario, runs)  # a namespace with only loopback for compose and Apache clusters
    if code is not None:
        return code
    if not args.detach:
        try:
            return _hold(runs[0], args.out, None)
        finally:
            release_netns()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the holder: its own session, no terminal
        os.close(read_fd)
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        code = 1
        try:
            from faults.journal import default_state_dir
            from harness.backends.compose import netns as compose_netns
            compose_netns.adopt(default_state_dir().resolve())  # the namespace lives as long as this holder
            code = _hold(runs[0], args.out, write_fd)
        finally:
            release_netns()
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "r") as pipe:
        line = pipe.readline().strip()
    if line.startswith("ready "):
        print(f"cluster {line.split()[1]} is up, held by pid {pid}; `rmq-chaos cluster down {line.split()[1]}`")
        return 0
    print(f"cluster up failed: {line or 'the holder exited'}", file=sys.stderr)
    return 1


def _hold(scenario, out: str, report_fd: int | None) -> int:
    """Stand the cluster up and hold it until Ctrl-C/SIGTERM, then take it down. A signal while it comes up stops
    that and takes down what was made; a second signal ends this process at once, saying what `rmq-chaos cleanup`
    will undo (`harness.interrupts`). Every failure is one line."""
    import threading

    from faults.cleanup import cleanup
    from faults.journal import Journal, default_state_dir
    from harness import interrupts
    from harness.backends.factory import make_backend
    from harness.rundir import RunDir

    def report(text: str) -> None:
        if report_fd is not None:
            os.write(report_fd, (text + "\n").encode())

    state_dir = default_state_dir()
    state_dir.mkdir(parents=True, exist_ok=True)
    cleanup(state_dir)
    rd = RunDir.create(out, scenario, f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{scenario.name}-cluster")
    backend = make_backend(scenario, rd, Journal(state_dir), state_dir)
    got: list[str] = []
    going_down = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        if got:
            interrupts.exit_now(name, state_dir, interrupts.hosts_of(scenario))
        got.append(name)
        if going_down.is_set():
            print(f"{name}: taking the cluster down already; a second signal stops at once", file=sys.stderr)
            return
        raise KeyboardInterrupt(name)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    code, ready = 0, False
    try:
        backend.up(lambda text: print(text, file=sys.stderr))
        ready = True
        report(f"ready {backend.cluster_id}")
        print(f"cluster {backend.cluster_id} ready; Ctrl-C or `rmq-chaos cluster down {backend.cluster_id}` "
              "takes it down", file=sys.stderr)
        held = threading.Event()
        while not held.wait(1.0):
            pass
    except KeyboardInterrupt:
        if not ready:
            report(f"error stopped by {got[0] if got else 'SIGINT'} before the cluster was ready")
            print(f"cluster up stopped by {got[0] if got else 'SIGINT'}; taking down what was made", file=sys.stderr)
            code = 1
        else:
            print(f"{got[0] if got else 'SIGINT'}: taking the cluster down", file=sys.stderr)
    except Exception as err:  # noqa: BLE001 - reported, then everything is taken down
        report(f"error {type(err).__name__}: {err}")
        print(f"cluster up failed: {err}", file=sys.stderr)
        code = 1
    finally:
        going_down.set()
        for what, step in (("copy logs", backend.copy_logs), ("cluster down", backend.down)):
            try:
                step()
            except Exception as err:  # noqa: BLE001 - one line each; `rmq-chaos cleanup` undoes what is left
                print(f"{what} failed: {err}; {interrupts.left_behind(state_dir, interrupts.hosts_of(scenario))}",
                      file=sys.stderr)
                code = 1
        for s, h in previous.items():
            signal.signal(s, h)
    return code


def _down(args: argparse.Namespace) -> int:
    from faults.cleanup import cleanup
    from faults.cluster_state import list_clusters, read_cluster_state
    from faults.journal import default_state_dir

    state_dir = default_state_dir()
    ids = list_clusters(state_dir)
    if args.all:
        chosen = ids
    elif args.cluster_id:
        if args.cluster_id not in ids:
            print(f"no cluster {args.cluster_id!r}; allowed: {', '.join(ids) or 'none is up'}", file=sys.stderr)
            return EXIT_INVALID
        chosen = [args.cluster_id]
    elif len(ids) == 1:
        chosen = ids
    else:
        print(f"name the cluster to take down; allowed: {', '.join(ids) or 'none is up'}", file=sys.stderr)
        return EXIT_INVALID
    status = 0
    for cid in chosen:
        owner = read_cluster_state(state_dir, cid).owner
        if owner.alive():
            os.kill(owner.pid, signal.SIGTERM)
            deadline = time.monotonic() + DOWN_TIMEOUT_S
            while owner.alive() and time.monotonic() < deadline:
                time.sleep(0.1)
            if owner.alive():
                print(f"{cid}: holder pid {owner.pid} did not end within {DOWN_TIMEOUT_S:g}s", file=sys.stderr)
                status = 1
                continue
        print(f"{cid}: down")
    leftover = cleanup(state_dir)
    if leftover.failed:
        print(f"cleanup: {len(leftover.failed)} entries could not be undone: {leftover.failed[0].get('error')}",
              file=sys.stderr)
        status = 1
    return status


def _join_one_netns(state_dir, ids: list[str]) -> None:
    """Join the network namespace the live clusters' brokers listen in, when there is exactly one other than this
    process's (a compose run's holder, an Apache run's `unshare`); with several, those clusters show no figures."""
    from faults.cluster_state import read_cluster_state
    from harness import netns

    owners = {}
    for cid in ids:
        owner = read_cluster_state(state_dir, cid).owner
        inode = netns.netns_inode(owner.pid) if owner.alive() else None
        if inode is not None and inode != netns.netns_inode():
            owners[inode] = owner.pid
    if len(owners) == 1:
        netns.join_netns_of(next(iter(owners.values())))


def _status(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from faults.cluster_state import list_clusters, read_cluster_state
    from faults.journal import default_state_dir
    from harness import brokerclient

    state_dir = default_state_dir()
    console = Console()
    ids = list_clusters(state_dir)
    if not ids:
        console.print(f"no cluster is up (state dir {state_dir})")
        return 0
    _join_one_netns(state_dir, ids)
    for cid in ids:
        st = read_cluster_state(state_dir, cid)
        holder = "alive" if st.owner.alive() else "DEAD (run `rmq-chaos cleanup`)"
        table = Table(title=f"{cid} ({st.backend}, holder pid {st.owner.pid}: {holder})")
        for col in ("node", "addr", "pids", "store", "commitLogMaxOffset", "putTps") + (
                ("container",) if st.backend == "compose" else ()):
            table.add_column(col)
        for n in st.nodes:
            target = st.target(n["name"])
            addr = n.get("extras", {}).get("addr", "")
            info = brokerclient.runtime_info_quick(addr) if n["role"] != "namesrv" and addr else None
            row = [n["name"], addr, ",".join(map(str, target.pids())) or "-", n.get("store_mount") or "-",
                   (info or {}).get("commitLogMaxOffset", "-"), (info or {}).get("putTps", "-").strip()]
            if st.backend == "compose":
                from harness.backends.compose.status import container_status
                row.append(container_status(n.get("container")))
            table.add_row(*row)
        console.print(table)
    return 0
