"""The analysis job: run directories in; `report/` per run (+ a comparison page for several) and an exit code out.

Entry points: `rmq-chaos report RUN_DIR...` (harness/commands/report.py), `python -m analysis RUN_DIR...` and
`spark-submit analysis/job.py RUN_DIR...` (then spark-submit's `--master` and config apply).

Exit codes: 0 every expectation held, 1 one failed, 2 one could not be measured (Jepsen: false > unknown > true);
`EXIT_BAD_INPUT` (254) when a run directory cannot be accepted (one line on stderr, nothing written);
`EXIT_CRASH` (255) when the job itself failed (e.g. Spark could not start).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

if __name__ == "__main__" and not __package__:
    # run as a script (spark-submit analysis/job.py): import the package, never this directory's modules bare
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from analysis.arguments import add_arguments  # noqa: E402
from analysis.contract import os_error_words
from analysis.errors import RunDirError  # noqa: E402
from analysis.rundir import RunDir, open_run_dir, run_dir_location  # noqa: E402

EXIT_BAD_INPUT = 254
EXIT_CRASH = 255  # Jepsen's code for a crashed checker; the run's verdict is then unknown
EXIT_UNKNOWN = 2  # the verdict could not be written (or measured): unknown
STATUS_STYLE = {"held": "green", "failed": "bold red", "unknown": "yellow"}
VALID_WORD = {True: "[green]valid[/]", False: "[bold red]invalid[/]", "unknown": "[yellow]unknown[/]"}


@dataclass
class JobResult:
    exit_code: int
    report_dirs: list[Path]
    compare_dir: Path | None
    results: list  # list[analysis.compute.RunResults]


def open_runs(paths: Sequence[str | Path]) -> list[RunDir]:
    """Open every run directory, refusing duplicates. Raises `RunDirError`."""
    if not paths:
        raise RunDirError("no run directory given (rmq-chaos report RUN_DIR...)")
    runs: list[RunDir] = []
    seen: dict[str, Path] = {}
    paths = [run_dir_location(p) for p in paths]  # a path or a file: URI; any other scheme refused in one line
    paths = [p for p in paths if not _is_comparison_output(p)] or paths  # `report runs/*` a second time
    for p in paths:
        run = open_run_dir(p)
        if run.run_id in seen:
            raise RunDirError(f"{run.path}: run id {run.run_id!r} is also the run id of {seen[run.run_id]}")
        seen[run.run_id] = run.path
        runs.append(run)
    return runs


def _is_comparison_output(path: Path) -> bool:
    """A comparison page's directory written by an earlier report (its `runs.json`, no run of its own)."""
    return (path / "runs.json").is_file() and not any(
        (path / name).exists() for name in ("events.jsonl", "scenario.yaml", "requests"))


def analyze(paths: Sequence[str | Path], *, out: Path | None = None, master: str | None = None,
            spark=None, console: Console | None = None, progress: bool = True,
            conf: Sequence[tuple[str, str]] = ()) -> JobResult:
    """Analyze run directories and write their reports. `out`: the report directory for one run, the comparison
    page's directory for several (default `<common parent>/report-compare`). `spark`: a session to use (kept
    running); otherwise one is started (`master`, default local[2]) and stopped at the end."""
    from analysis import cds
    from analysis.compute import compute
    from analysis.outputs import default_compare_dir, write_compare, write_run_report
    from analysis.progress import JobProgress
    from analysis.session import get_session, own_driver_archive
    from analysis.verdict import exit_code_of

    console = console or Console(stderr=True)
    runs = open_runs(paths)
    own_session = spark is None
    input_bytes = sum(r.input_bytes for r in runs)
    archive = own_driver_archive(master, conf, input_bytes) if own_session else None
    with JobProgress(console, enabled=progress) as prog:
        prog.step(f"starting Spark ({master or 'local[2]'})" if own_session else "using the running Spark session")
        archive = cds.prepare(archive) if archive is not None else None
        spark = spark or get_session(master, conf=conf, input_bytes=input_bytes, archive=archive)
        prog.attach(spark.sparkContext)
        ok = False
        try:
            results = compute(spark, runs, step=prog.step)
            prog.step("writing reports")
            dirs = [write_run_report(r, out if out is not None and len(results) == 1 else None) for r in results]
            compare_dir = None
            if len(results) > 1:
                compare_dir = write_compare(results, out or default_compare_dir(results))
            ok = True
        finally:
            try:
                if own_session:
                    spark.stop()
            finally:
                if archive is not None:
                    if ok and archive.writing:
                        prog.step("saving the driver's class archive for the next reports (once)")
                    cds.finish(archive, ok)
        prog.done()
    code = exit_code_of([r.verdict for r in results])
    return JobResult(code, dirs, compare_dir, results)


def print_summary(job: JobResult, console: Console) -> None:
    """A short table per run, every failed/unknown expectation with its measured value, and where the reports are."""
    table = Table(title="rmq-chaos report", title_justify="left")
    for col in ("run", "scenario", "verdict", "held", "failed", "unknown"):
        table.add_column(col)
    for res in job.results:
        n = res.verdict.counts()
        table.add_row(res.run.run_id, res.run.scenario_name, VALID_WORD[res.verdict.valid], str(n["held"]),
                      str(n["failed"]), str(n["unknown"]))
    console.print(table)
    single = len(job.results) == 1
    for res in job.results:
        for r in res.verdict.results:
            if single or r.status != "held":
                style = STATUS_STYLE[r.status]
                console.print(f"[{style}]{r.status.upper():7}[/] {res.run.run_id}: {r.message()}", soft_wrap=True,
                              highlight=False, markup=True)
    for res, d in zip(job.results, job.report_dirs, strict=True):
        console.print(f"report of {res.run.run_id}: {d / 'index.html'}", soft_wrap=True, highlight=False)
    if job.compare_dir is not None:
        console.print(f"comparison: {job.compare_dir / 'index.html'}", soft_wrap=True, highlight=False)


def run_from_args(args: argparse.Namespace) -> int:
    """Run the job for parsed arguments; prints a one-line error for bad input. Returns the exit code."""
    console = Console(stderr=True)
    try:
        job = analyze(args.run_dirs, out=args.out, master=args.master, console=console,
                      progress=not args.no_progress, conf=getattr(args, "conf", ()))
    except RunDirError as err:
        console.print(f"rmq-chaos report: error: {err}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    except OSError as err:  # a full disk, a read-only or vanished directory: one line, the verdict is unknown
        where = f": {err.filename}" if err.filename else ""
        console.print(f"rmq-chaos report: cannot write the report: {os_error_words(err)}{where}",
                      markup=False, highlight=False, soft_wrap=True)
        return EXIT_UNKNOWN
    except Exception as err:  # noqa: BLE001 - a crash must not read as "an expectation failed" (exit 1)
        console.print_exception(max_frames=8)
        console.print(f"rmq-chaos report: the analysis crashed: {type(err).__name__}: {err}", markup=False,
                      highlight=False, soft_wrap=True)
        return EXIT_CRASH
    print_summary(job, Console())
    return job.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rmq-chaos-report", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
