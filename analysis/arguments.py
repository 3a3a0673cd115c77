"""Command-line arguments of the analysis job, shared by `rmq-chaos report` and `python -m analysis`.

Imports only the standard library, so building the `rmq-chaos` parser stays fast."""
from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                        help="run directories (runs/<run-id>/), or file: URIs of them (file:///mnt/runs/<run-id>: on a "
                             "cluster, a mount the driver and every executor host have at that path)")
    parser.add_argument("--master", default=None,
                        help="Spark master URL (default local[2]; under spark-submit, spark-submit's)")
    parser.add_argument("--out", type=Path, default=None,
                        help="one run: its report directory (default RUN_DIR/report); several runs: the comparison "
                             "page's directory (default <common parent>/report-compare)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", type=spark_conf,
                        help="a Spark setting for the job's session (repeatable), e.g. spark.executor.memory=8g")
    parser.add_argument("--no-progress", action="store_true", help="no progress display on the terminal")


def spark_conf(text: str) -> tuple[str, str]:
    """`KEY=VALUE` as a pair; argparse turns the ValueError into a one-line usage error."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not key.startswith("spark."):
        raise argparse.ArgumentTypeError(f"--conf {text!r}: expected spark.KEY=VALUE")
    return key.strip(), value
