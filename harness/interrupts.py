"""Ctrl-C and SIGTERM for the commands that change machines (`run`, `cluster up`): the first signal starts the
wind-down in order (the caller's), a second one ends the process at once, saying in one line what `rmq-chaos cleanup`
will undo: the open journal entries of this process on this machine (faults, node processes, stores, cgroups) and,
for a cluster on hosts, the hosts' own journals (whose agents revert their faults within the lease when their
channel closes; nodes and stores stay for `cleanup --hosts`).

Child processes that must outlive a signal meant for the harness (nodes, the load, SSH channels to the hosts' agents,
the analysis) run in sessions of their own, so a terminal's Ctrl-C or a `timeout`'s SIGTERM to the process group
reaches the harness alone and the harness winds them down in order."""
from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path
from typing import NoReturn

EXIT_STOPPED = 2
"""A run or cluster stopped at once: its verdict is unknown."""
NAMES = {"resource:process": ("node process", "node processes"), "resource:loop_store": ("store mount", "store mounts"),
         "resource:cgroups": ("cgroup set", "cgroup sets"), "resource:swapfile": ("swap file", "swap files")}


def left_behind(state_dir: str | os.PathLike[str] | None, hosts: str | None = None) -> str:
    """What `rmq-chaos cleanup` will undo after this process ends now, as one phrase."""
    from faults.journal import Journal, Owner

    me = Owner.current()
    counts: Counter[str] = Counter()
    faults: list[str] = []
    try:
        entries = Journal(state_dir).open_entries() if state_dir is not None and Path(state_dir).exists() else []
    except OSError:
        entries = []
    for e in entries:
        if e.owner != me:
            continue
        if e.kind.startswith("fault:"):
            faults.append(f"{e.kind.partition(':')[2]} on {e.target or '?'}")
        else:
            counts[e.kind] += 1
    parts = []
    if faults:
        parts.append(f"{_count(len(faults), ('fault', 'faults'))} ({', '.join(faults[:4])}"
                     f"{', ...' if len(faults) > 4 else ''})")
    parts += [_count(n, NAMES.get(kind, (kind, kind))) for kind, n in sorted(counts.items())]
    here = f"`rmq-chaos cleanup` will undo {', '.join(parts)}" if parts else "nothing is left on this machine"
    if hosts:
        here += (f"; on the hosts, the agents revert their faults within the lease as their channels close, and "
                 f"`rmq-chaos cleanup --hosts {hosts}` removes the nodes and stores left there")
    return here


def _count(n: int, names: tuple[str, str]) -> str:
    return f"{n} {names[0] if n == 1 else names[1]}"


def exit_now(name: str, state_dir: str | os.PathLike[str] | None, hosts: str | None = None) -> NoReturn:
    """The second signal: say what is left and end this process without waiting for the wind-down."""
    try:
        sys.stderr.write(f"{name} again: stopping now, without finishing the wind-down; "
                         f"{left_behind(state_dir, hosts)}\n")
        sys.stderr.flush()
    finally:
        os._exit(EXIT_STOPPED)


def hosts_of(scenario: object) -> str | None:
    """The inventory file a scenario's cluster runs on (ssh backend), for the cleanup line."""
    cluster = getattr(scenario, "cluster", None)
    if getattr(cluster, "backend", None) != "ssh":
        return None
    hosts = getattr(cluster, "hosts", None)
    return hosts if isinstance(hosts, str) else "<inventory>"
