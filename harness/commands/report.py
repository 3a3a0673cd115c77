"""`rmq-chaos report RUN_DIR...`: analyze run directories with Spark; exit 0 valid, 1 failed, 2 unknown.

Ctrl-C or SIGTERM stops the analysis at once and says so in one line, exit 2, no traceback: the run directories are
left as they were, and no new verdict is written (the job writes its verdict last)."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

NAME = "report"
HELP = "analyze run directories with Spark: verdict, report/index.html, junit.xml (exit 0/1/2)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from analysis.arguments import add_arguments as job_arguments  # standard library only: --help stays fast

    job_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """The job runs in a thread of its own, so that Spark (which takes over SIGINT when started in the main thread,
    and whose handler cancels jobs from inside the running call: tracebacks) never sees the signal: the main thread
    waits, and a Ctrl-C or SIGTERM ends the process with one line. The Spark JVM ends with it (its driver's pipe
    closes)."""
    from analysis.job import EXIT_CRASH, run_from_args

    done: dict[str, int] = {}

    def job() -> None:
        done["code"] = run_from_args(args)

    worker = threading.Thread(target=job, name="report-job", daemon=True)
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        worker.start()
        while worker.is_alive():
            worker.join(0.2)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    return done.get("code", EXIT_CRASH)


def _stop(signum: int, _frame: object) -> None:
    from analysis.job import EXIT_UNKNOWN

    sys.stdout.flush()
    sys.stderr.write(f"\nrmq-chaos report: stopped by {signal.Signals(signum).name}; no new verdict written (the run "
                     f"directories are as they were; run the report again to analyze them)\n")
    sys.stderr.flush()
    os._exit(EXIT_UNKNOWN)
