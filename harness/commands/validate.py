"""`rmq-chaos validate SCENARIO...`: check scenario files (every run of a matrix) without starting anything."""
from __future__ import annotations

import argparse

NAME = "validate"
HELP = "check scenario files (schema, matrix, faults, broker.conf lint) without starting anything"
EXIT_INVALID = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenarios", nargs="+", metavar="SCENARIO", help="scenario YAML file(s)")
    parser.add_argument("--print", dest="show", action="store_true",
                        help="print each resolved scenario (defaults filled in) as YAML")


def run(args: argparse.Namespace) -> int:
    import yaml
    from rich.console import Console

    from harness.commands.run import scenario_runs

    out = Console()
    status = 0
    for path in args.scenarios:
        runs = scenario_runs(path)
        if runs is None:
            status = EXIT_INVALID
            continue
        for s in runs:
            faults = ", ".join(f"{f.id}({f.kind}->{f.target})" for _, f in s.faults) or "no faults"
            out.print(f"[green]ok[/] {path}: {s.name}: {len(s.phases)} phases, {s.total_s:g}s, {faults}, "
                      f"{len(s.expect)} expectations", highlight=False)
            if args.show:
                out.print(yaml.safe_dump(s.resolved(), sort_keys=False), highlight=False, markup=False)
    return status
