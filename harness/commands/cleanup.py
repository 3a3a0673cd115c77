"""`rmq-chaos cleanup`: revert whatever dead runs left (faults in effect, node processes, stores, loop devices,
cgroups, swap files, relays), from the journal in the state dir. Idempotent; runs at the start of every run too."""
from __future__ import annotations

import argparse

NAME = "cleanup"
HELP = "revert what dead runs left behind (faults, processes, mounts, cgroups, swap)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state-dir", help="state dir (default: $RMQ_CHAOS_STATE or /var/lib/rmq-chaos)")
    parser.add_argument("--all", action="store_true",
                        help="also revert entries whose owner is still alive (a running harness or kept cluster)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    from harness.commands.run import add_host_arguments

    add_host_arguments(parser)


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from rich.console import Console
    from rich.table import Table

    from faults.cleanup import cleanup
    from faults.journal import default_state_dir

    console = Console()
    if getattr(args, "hosts", None):
        return _hosts(args, console)
    state = Path(args.state_dir) if args.state_dir else default_state_dir()
    with console.status(f"cleaning up {state}"):
        report = cleanup(state, all_owners=args.all)
    if args.json:
        console.print_json(json.dumps(report.to_dict(), default=str))
        return 0 if report.ok else 1
    if not report.reverted and not report.failed:
        console.print(f"nothing to clean up in {state}" + (f" ({len(report.live)} entries of live owners left alone)"
                                                          if report.live else ""))
    else:
        table = Table(title=f"cleanup of {state}")
        for col in ("entry", "what", "run", "node", "result"):
            table.add_column(col)
        for item in report.reverted:
            table.add_row(item["id"], item["kind"], item["run_id"], item["target"],
                          "[green]" + "; ".join(str(r.get("result")) for r in item["undo"]) + "[/]")
        for item in report.failed:
            table.add_row(item["id"], item["kind"], item["run_id"], item["target"], f"[red]{item['error']}[/]")
        console.print(table)
    for item in report.failed:  # in full: the table may cut long words
        console.print(could_not_undo(item), markup=False, highlight=False, soft_wrap=True)
    for line in report.left:
        console.print(f"still on the machine: {line}", markup=False, highlight=False, soft_wrap=True)
    for cid in report.clusters_removed:
        console.print(f"removed the state file of cluster {cid}")
    return 0 if report.ok else 1


def _hosts(args: argparse.Namespace, console) -> int:
    """Every host of the inventory cleaned; exit 0 when every one is clean (one line per host)."""
    from harness.hosts.cleanup import clean_hosts
    from harness.hosts.inventory import load_inventory
    from harness.scenario import SourceError

    try:
        inventory = load_inventory(args.hosts)
    except SourceError as err:
        console.print(err.one_line(), markup=False, highlight=False, soft_wrap=True)
        return 2
    from harness.commands.run import apply_host_arguments

    apply_host_arguments(args)
    results = clean_hosts(inventory)
    for r in results:
        if "error" in r:
            line = f"host {r['host']}: not cleaned: {r['error']}"
        elif r["report"] is None:
            line = f"host {r['host']}: nothing of rmq-chaos there"
        else:
            rep = r["report"]
            line = (f"host {r['host']}: {len(rep.get('reverted', []))} reverted, {len(rep.get('failed', []))} failed, "
                    f"{r['agents_ended']} agent(s) ended" + ("" if r["ok"] else " (not clean)"))
        console.print(line, markup=False, highlight=False, soft_wrap=True)
        for item in (r.get("report") or {}).get("failed", []):  # each failure in one line: what could not be undone
            console.print(f"host {r['host']}: {could_not_undo(item)}", markup=False, highlight=False, soft_wrap=True)
        for left in (r.get("report") or {}).get("left", []):
            console.print(f"host {r['host']}: still on the machine: {left}", markup=False, highlight=False,
                          soft_wrap=True)
    return 0 if all(r["ok"] for r in results) else 1


def could_not_undo(item: dict) -> str:
    """One line for a journal entry whose undo failed (a cleanup report's `failed` item)."""
    return (f"could not undo {item['kind']} {item['id']} (run {item['run_id'] or '-'}, node {item['target'] or '-'}): "
            f"{item['error']}")
