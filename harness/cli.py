"""The `rmq-chaos` command line: one argparse sub-command per module in `harness/commands/`.

Each module there defines `NAME`, `HELP`, `add_arguments(parser)` and `run(args) -> int` (the exit code)."""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from harness import commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rmq-chaos", description="Chaos and load tests for RocketMQ clusters")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"harness.commands.{info.name}")
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help(sys.stderr)
        return 2
    return int(args._run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
