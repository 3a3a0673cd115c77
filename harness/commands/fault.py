"""`rmq-chaos fault list|apply|verify|revert`: faults by hand on a running cluster. The nodes come from the cluster
state file the harness writes (`$RMQ_CHAOS_STATE/clusters/<cluster-id>.json`); faults are journaled as owned by the
process that keeps the cluster, so they outlive this command and `cleanup` reverts them once that process is gone. The command joins the network
namespace of that process when it has one of its own (compose runs, Apache programs), where the brokers listen."""
from __future__ import annotations

import argparse
import json
from typing import Any

NAME = "fault"
HELP = "apply, verify, revert or list faults on a running cluster"
EXIT_OK, EXIT_FAILED, EXIT_REFUSED = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state-dir", help="state dir (default: $RMQ_CHAOS_STATE or /var/lib/rmq-chaos)")
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="fault kinds and their parameters, and the faults applied now")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ap = sub.add_parser("apply", help="apply (and verify) a fault on one node")
    ap.add_argument("kind", help="fault kind (see `rmq-chaos fault list`)")
    ap.add_argument("--node", required=True, help="node name: namesrv, master or slave")
    ap.add_argument("--cluster", help="cluster id (default: the only running cluster)")
    ap.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE", help="a fault parameter")
    ap.add_argument("--params", help="fault parameters as a JSON object")
    ap.add_argument("--id", dest="fault_id", help="fault id (default: <kind>-<random>)")
    ap.add_argument("--no-verify", action="store_true", help="do not measure the effect after applying")
    ap.add_argument("--events", help="append fault events to this events.jsonl")
    for name, text in (("verify", "measure the effect of an applied fault"), ("revert", "revert an applied fault")):
        p = sub.add_parser(name, help=text)
        p.add_argument("fault_id", help="fault id or journal entry id (see `rmq-chaos fault list`)")
        p.add_argument("--events", help="append fault events to this events.jsonl")


def _params(args: argparse.Namespace) -> dict[str, Any]:
    from faults.errors import FaultRefused

    params: dict[str, Any] = {}
    if args.params:
        try:
            params.update(json.loads(args.params))
        except ValueError as e:
            raise FaultRefused(f"--params: not a JSON object: {e}") from None
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise FaultRefused(f"--param {item!r}: expected KEY=VALUE")
        params[key] = value
    return params


def _emitter(console: Any, path: str | None):
    from faults.events import JsonlEventSink

    sink = JsonlEventSink(path) if path else None

    def emit(event: dict) -> None:
        color = {"ok": "green", "failed": "red"}.get(event["status"], "cyan")
        what = event["action"] + (f" {event['step']}" if event.get("step") else "")
        console.print(f"[{color}]{event['fault_id']} {what}: {event['status']}[/]"
                      + (f" [red]{event['error']}[/]" if event.get("error") else ""))
        if sink:
            sink(event)
    return emit


def _open_fault(journal: Any, fault_id: str):
    from faults.errors import FaultRefused

    found = [e for e in journal.open_entries() if e.kind.startswith("fault:")
             and fault_id in (e.id, e.data.get("fault_id"))]
    if not found:
        raise FaultRefused(f"no applied fault {fault_id!r} in {journal.path} (see `rmq-chaos fault list`)")
    return found[-1]


def _cluster(state: Any, cluster_id: str | None):
    from faults.cluster_state import list_clusters, read_cluster_state
    from faults.errors import FaultRefused

    if cluster_id is None:
        ids = list_clusters(state)
        if len(ids) != 1:
            raise FaultRefused(f"--cluster: {len(ids)} clusters in {state}/clusters ({', '.join(ids) or 'none'}); "
                               f"name one")
        cluster_id = ids[0]
    cluster = read_cluster_state(state, cluster_id)
    if not cluster.owner.alive():
        raise FaultRefused(f"cluster {cluster_id}: its owner (pid {cluster.owner.pid}) is gone; run "
                           f"`rmq-chaos cleanup`")
    return cluster


def _print(console: Any, title: str, data: dict) -> None:
    console.print(f"[bold]{title}[/]")
    console.print_json(json.dumps(data, default=str))


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rich.console import Console

    from faults.errors import FaultError, FaultNotEffective, FaultRefused, FaultUnavailable
    from faults.journal import Journal, default_state_dir
    from harness import netns

    console = Console(stderr=False)
    state = Path(args.state_dir) if args.state_dir else default_state_dir()
    try:
        if args.action == "list":
            return _list(console, state, args.json)
        emit = _emitter(console, args.events)
        if args.action == "apply":
            from faults.registry import fault_class

            cls = fault_class(args.kind)
            params = cls.parse_params(_params(args))
            cluster = _cluster(state, args.cluster)
            netns.join_netns_of(cluster.owner.pid)  # its brokers and relay listen in the holder's namespace
            journal = Journal(state, owner=cluster.owner)
            fault = cls(cluster.target(args.node, journal), params, journal=journal, emit=emit,
                        fault_id=args.fault_id)
            _print(console, f"applied {fault.fault_id} (journal entry {fault.tag})", fault.apply())
            if not args.no_verify:
                _print(console, "verified", fault.verify())
            return EXIT_OK
        from faults.registry import fault_class

        journal = Journal(state)
        entry = _open_fault(journal, args.fault_id)
        if entry.owner.alive():
            netns.join_netns_of(entry.owner.pid)
        fault = fault_class(entry.data["kind"]).restore(entry, journal.with_owner(entry.owner), emit)
        result = fault.verify() if args.action == "verify" else fault.revert()
        _print(console, f"{args.action} {fault.fault_id}", result)
        return EXIT_OK
    except FaultNotEffective as e:
        console.print(str(e), style="red", markup=False, highlight=False)  # "<id> (<kind> on <target>): not effective: ..."
        return EXIT_FAILED
    except (FaultRefused, FaultUnavailable) as e:
        console.print(f"[red]refused:[/] {e}")
        return EXIT_REFUSED
    except FaultError as e:
        console.print(f"[red]failed:[/] {e}")
        return EXIT_FAILED


def _list(console: Any, state: Any, as_json: bool) -> int:
    from rich.table import Table

    from faults.journal import Journal
    from faults.registry import FAULTS

    kinds = [{**cls.describe(), "problems": cls.problems()} for cls in FAULTS.values()]
    applied = []
    if state.exists():
        applied = [{"fault_id": e.data.get("fault_id"), "entry": e.id, "kind": e.data.get("kind"),
                    "node": e.target, "run_id": e.run_id, "owner_pid": e.owner.pid, "owner_alive": e.owner.alive(),
                    "params": e.data.get("params")}
                   for e in Journal(state).open_entries() if e.kind.startswith("fault:")]
    if as_json:
        console.print_json(json.dumps({"kinds": kinds, "applied": applied}, default=str))
        return EXIT_OK
    table = Table(title="fault kinds")
    for col in ("kind", "what it does", "parameters", "on this machine"):
        table.add_column(col)
    for k in kinds:
        params = "\n".join(f"{n}{'' if p['required'] else '=' + str(p['default'])}: {p['description']}"
                           for n, p in k["params"].items())
        table.add_row(k["kind"], k["summary"], params or "-", "; ".join(k["problems"]) or "ok")
    console.print(table)
    if applied:
        t2 = Table(title="applied now")
        for col in ("fault_id", "entry", "kind", "node", "run_id", "owner"):
            t2.add_column(col)
        for a in applied:
            t2.add_row(a["fault_id"], a["entry"], a["kind"], a["node"], a["run_id"],
                       f"{a['owner_pid']} ({'alive' if a['owner_alive'] else 'gone'})")
        console.print(t2)
    return EXIT_OK
