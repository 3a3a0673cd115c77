"""`rmq-chaos report RUN_DIR...`: analyze run directories with Spark; exit 0 valid, 1 failed, 2 unknown."""
from __future__ import annotations

import argparse

NAME = "report"
HELP = "analyze run directories with Spark: verdict, report/index.html, junit.xml (exit 0/1/2)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from analysis.arguments import add_arguments as job_arguments  # standard library only: --help stays fast

    job_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from analysis.job import run_from_args

    return run_from_args(args)
