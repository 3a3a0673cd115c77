"""Cost per row of the whole `rmq-chaos report`, 1M to 50M sends, local[2] against a two-worker cluster (issue 44).

For each target size, a run directory of real-shaped rows is generated from a real run
(`analysis_real_shapes.generate`, the factor picked from the real run's request rows), then the whole `rmq-chaos
report` command is timed on it once on local[2] (the default) and once with `--master spark://...` on a standalone
master with two workers of one core and 3 GiB each on 127.0.0.1 (tests/analysis/test_analysis_cluster.py's
`TwoWorkers`, its workers offered 3g; every daemon ended by its pid at the end). Each report runs in a fresh process
group (`python -m harness.cli report --no-progress`, i.e. `rmq-chaos report`); the cluster gets the run as a `file:`
URI. Prints per size: request rows, part files, bytes, wall seconds and seconds per million request rows of each
side, and the load average before and after each report. Generated directories are removed after their reports
unless --keep. Wall seconds on whatever else the machine runs; asserts nothing about speed.

    .venv/bin/rmq-chaos run scenarios/slave-readonly-default.yaml --out /var/tmp/cpr --no-report   # a real run
    .venv/bin/python benchmarks/analysis_cost_per_row.py --run-dir /var/tmp/cpr/<run> --rows 1M 5M 10M 25M 50M
    .venv/bin/python benchmarks/analysis_cost_per_row.py --run-dir <run> --rows 1M --stop-at 20:28   # UTC deadline
    .venv/bin/python benchmarks/analysis_cost_per_row.py --run-dir <run> --cluster-conf spark.sql.shuffle.partitions=8
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
from analysis_real_shapes import generate
from support import REPO

sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "analysis")]
from process_group import run_group  # noqa: E402 (tests/analysis/process_group.py)
from test_analysis_cluster import START_TIMEOUT_S, WORKERS, TwoWorkers  # noqa: E402

WORKER_CORES = 1
WORKER_MEMORY = "3g"
CLUSTER_CONF = {
    "spark.driver.host": "127.0.0.1", "spark.driver.memory": "4g",  # the local driver's memory (analysis.session)
    "spark.executor.memory": WORKER_MEMORY, "spark.executor.cores": str(WORKER_CORES),
    "spark.cores.max": str(WORKERS * WORKER_CORES),
    # the first job waits for both executors, and a task never waits for a busy executor it prefers (as the test)
    "spark.scheduler.minRegisteredResourcesRatio": "1.0",
    "spark.scheduler.maxRegisteredResourcesWaitingTime": f"{START_TIMEOUT_S}s", "spark.locality.wait": "0"}
"""Settings of the cluster's reports; the rest (shuffle partitions among them) are Spark's, as `rmq-chaos report
--master` leaves them."""


@dataclass
class Workers(TwoWorkers):
    """`TwoWorkers` with workers of WORKER_MEMORY (the test's offer 1g): the same daemons, logs and stop."""

    memory: str = WORKER_MEMORY

    def apps(self) -> list[set[str]]:
        """Per worker, the applications it ran an executor for (their work directories)."""
        return [{p.name for p in (self.worker_dir(n) / "work").glob("app-*")} for n in range(WORKERS)]


def rows_arg(text: str) -> int:
    """`1M`, `500k`, `2.5M` or a plain number of rows."""
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:].lower(), 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def request_rows(run: Path) -> int:
    return sum(pq.ParquetFile(p).metadata.num_rows for p in (run / "requests").rglob("part-*.parquet"))


def part_files(run: Path) -> tuple[int, int]:
    """How many part files `run` has and their bytes."""
    parts = list(run.rglob("part-*.parquet"))
    return len(parts), sum(p.stat().st_size for p in parts)


def report(cmd: list[str], env: dict[str, str], timeout_s: float) -> dict:
    """One report in its own process group (ended by its id when done): wall s, exit code, load averages."""
    before = os.getloadavg()[0]
    start = time.monotonic()
    try:
        proc = run_group(cmd, timeout=timeout_s, env=env, cwd=REPO)
        code, err = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired:
        code, err = None, f"stopped after {timeout_s:.0f} s"
    wall = time.monotonic() - start
    return {"wall": wall, "code": code, "err": err, "load": (before, os.getloadavg()[0])}


def writes_archive(run: Path) -> bool:
    """Whether a local report of `run` would write the driver's class archive (analysis/cds.py: the first report
    with these driver flags does, and pays for it once)."""
    from analysis.cds import archive_for
    from analysis.rundir import open_run_dir
    from analysis.session import driver_jvm_options

    target = archive_for(driver_jvm_options(open_run_dir(run).input_bytes))
    return target is not None and not target.path.is_file()


def until(stop_at: dt.datetime | None) -> float:
    return float("inf") if stop_at is None else (stop_at - dt.datetime.now(dt.UTC)).total_seconds()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run-dir", type=Path, required=True, help="a real run directory (the shape to repeat)")
    ap.add_argument("--rows", type=rows_arg, nargs="+", default=[rows_arg(x) for x in ("1M", "5M", "10M")],
                    help="target request rows per generated run (1M, 5M, ...; the factor is rounded)")
    ap.add_argument("--workdir", type=Path, default=Path("/var/tmp/analysis-cost-per-row"))
    ap.add_argument("--keep", action="store_true", help="keep the generated run directories")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds one report may take (then it is ended)")
    ap.add_argument("--stop-at", help="HH:MM UTC: end the report running then and stop (a shared machine's slot)")
    ap.add_argument("--cluster-conf", action="append", default=[], metavar="KEY=VALUE",
                    help="one more Spark setting for the cluster's reports (repeatable; wins over CLUSTER_CONF)")
    ap.add_argument("--min-free-gb", type=float, default=20, help="skip a size whose run would leave less free")
    args = ap.parse_args()
    real = args.run_dir.resolve()
    if not (real / "events.jsonl").exists():
        raise SystemExit(f"{real}: not a run directory (events.jsonl missing)")
    stop_at = None
    if args.stop_at:
        now = dt.datetime.now(dt.UTC)
        hh, mm = map(int, args.stop_at.split(":"))
        stop_at = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
        if stop_at <= now:
            raise SystemExit(f"--stop-at {args.stop_at}: already past ({now:%H:%M} UTC)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the cluster's daemons are ended in `finally`
    base_rows = request_rows(real)
    base_files, base_bytes = part_files(real)
    print(f"base run {real}: {base_rows:,} request rows, {base_files} part files, {base_bytes:,} bytes", flush=True)
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    base_cmd = [sys.executable, "-m", "harness.cli", "report", "--no-progress"]
    conf = {**CLUSTER_CONF, **dict(kv.split("=", 1) for kv in args.cluster_conf)}
    cluster_conf = [a for k, v in conf.items() for a in ("--conf", f"{k}={v}")]
    args.workdir.mkdir(parents=True, exist_ok=True)
    cluster = Workers(args.workdir / "spark")
    shutil.rmtree(cluster.root, ignore_errors=True)  # an interrupted run's logs
    results = []
    try:
        cluster.start()
        print(f"cluster {cluster.url}: {WORKERS} workers, {WORKER_CORES} core and {cluster.memory} each "
              f"(daemon pids {[p.pid for p in cluster.procs]})", flush=True)
        print(f"local:   {' '.join(base_cmd)} RUN\ncluster: {' '.join(base_cmd)} --master {cluster.url} "
              f"{' '.join(cluster_conf)} file://RUN", flush=True)
        for target in args.rows:
            if until(stop_at) <= 0:
                break
            k = max(1, round(target / base_rows))
            free = shutil.disk_usage(args.workdir).free
            need = 2 * k * base_bytes  # generated parts are not written with the run's encoding: larger
            if free - need < args.min_free_gb * 1e9:
                print(f"{target:,} rows (x{k}): skipped, {free / 1e9:.0f} GB free, about {need / 1e9:.0f} GB "
                      f"needed, {args.min_free_gb:.0f} GB to keep", flush=True)
                break
            t = time.monotonic()
            run = generate(real, args.workdir / f"x{k}", k)
            rows, (files, size) = request_rows(run), part_files(run)
            print(f"x{k}: {rows:,} request rows, {files} part files, {size:,} bytes, generated in "
                  f"{time.monotonic() - t:.0f} s", flush=True)
            row = {"rows": rows, "files": files, "bytes": size, "k": k}
            results.append(row)
            for side, cmd in (("local", [*base_cmd, str(run)]),
                              ("cluster", [*base_cmd, "--master", cluster.url, *cluster_conf, run.as_uri()])):
                left = min(args.timeout, until(stop_at))
                if left <= 0:
                    break
                apps, writes = cluster.apps(), side == "local" and writes_archive(run)
                r = row[side] = report(cmd, env, left)
                r["archive"] = writes
                if side == "cluster":
                    r["workers"] = sum(bool(after - apps_before) for after, apps_before in zip(cluster.apps(), apps, strict=True))
                print(f"x{k} {side}: wall {r['wall']:.1f} s, {r['wall'] / rows * 1e6:.2f} s per M rows, exit "
                      f"{r['code']}, load average {r['load'][0]:.1f} -> {r['load'][1]:.1f}"
                      + (f", executors on {r['workers']} workers" if side == "cluster" else "")
                      + (" (it wrote the driver's class archive)" if writes else ""), flush=True)
                if r["code"] not in (0, 1, 2):
                    print(f"  stderr: {r['err'][-2000:]}", file=sys.stderr, flush=True)
                shutil.rmtree(run / "report", ignore_errors=True)  # the next side writes its own
            if not args.keep:
                shutil.rmtree(run.parent, ignore_errors=True)
            if any(row.get(s, {}).get("code") not in (0, 1, 2) for s in ("local", "cluster")):
                print("stopping: a report failed, was ended or did not run", flush=True)
                break
    finally:
        cluster.stop()
        shutil.rmtree(cluster.root, ignore_errors=True)
    print_table(results)
    return 0


def print_table(results: list[dict]) -> None:
    def side(row: dict, name: str) -> list[str]:
        r = row.get(name)
        if r is None:
            return ["-", "-", "-"]
        mark = " (1)" if r.get("archive") else ""
        if r["code"] not in (0, 1, 2):
            why = "ended" if r["code"] is None else f"exit {r['code']}"
            return [f"({r['wall']:.0f}, {why})", "-", f"{r['load'][0]:.1f}-{r['load'][1]:.1f}"]
        return [f"{r['wall']:.1f}{mark}", f"{r['wall'] / row['rows'] * 1e6:.2f}", f"{r['load'][0]:.1f}-{r['load'][1]:.1f}"]

    print("\n| request rows | factor | part files | bytes | local[2] wall s | local[2] s per M rows | load avg "
          "(local) | cluster wall s | cluster s per M rows | load avg (cluster) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in results:
        print(f"| {row['rows']:,} | x{row['k']} | {row['files']:,} | {row['bytes']:,} | "
              + " | ".join(side(row, "local") + side(row, "cluster")) + " |")
    if any(row.get("local", {}).get("archive") for row in results):
        print("\n(1) this report wrote the driver's class archive (once per driver JVM flags; later ones read it)")


if __name__ == "__main__":
    sys.exit(main())
