"""Benchmark of the analysis job: generated run directories of 100k, 1M and 10M request rows, the whole Spark job
on local[2], the same latency percentiles on Spark alone and on DuckDB (2 threads) over the same Parquet files.

Prints the figures and their ratios; asserts nothing about speed (goals: job <= 60 s at 10M rows, Spark <= 3x
DuckDB, time per row falling with size). Also checks that Spark and DuckDB agree on every percentile (both
nearest rank). Spark's percentiles are the job's: with its JVM aggregates when the session has them
(analysis/jvm), and then also timed with the Spark SQL expressions alone (column "Spark, SQL only"), which must
agree with DuckDB alike. Every time is given twice: wall seconds, and CPU seconds (the Spark JVM's user+system
time from /proc plus this Python process's; DuckDB's threads run in this process), because the machine it runs
on is shared and CPU time is the steadier measure under load. The load average is printed before and after.

Spark's fixed cost: the script times a trivial two-stage job (a tiny shuffle) and counts the jobs and stages the
analysis job ran; jobs x that cost is the floor the job cannot go below on this machine whatever the rows.

    .venv/bin/python benchmarks/analysis_spark_vs_duckdb.py                    # 100k, 1M and 10M rows
    .venv/bin/python benchmarks/analysis_spark_vs_duckdb.py --rows 1000000 --keep --workdir /tmp/bench
    .venv/bin/python benchmarks/analysis_spark_vs_duckdb.py --workdir /tmp/bench --keep   # reuses generated runs
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import yaml
from rich.console import Console
from rich.table import Table

from analysis import contract as c

T0 = 1_700_000_000_000_000_000
NS = 1_000_000_000
RATE = 16_000  # sends/s, like the healthy 4.9.1 baseline on this kind of machine (fixtures/README.md)
WORKERS = 64
PART_ROWS = 1_000_000
DROP_EVERY = 100_003  # every so many acknowledged keys is missing from the master's read-back
QUANTILES = (0.5, 0.9, 0.99, 0.999)
WARM_UP_ROWS = 200_000
REPEATS = 3  # percentile timings: best of this many (the VM is shared)
EXPECT = [
    {"name": "ok-before", "phase": "healthy", "outcome": "SEND_OK", "metric": "share", "min": 0.99},
    {"phase": "readonly", "outcome": "SLAVE_NOT_AVAILABLE", "metric": "latency_p99_ms", "basis": "actual",
     "max": 100},
    {"name": "nothing-lost", "metric": "lost", "max": 0},
    {"metric": "not_on_slave", "min": 1},
    {"fault": "ro", "metric": "fault_to_first_error_s", "max": 30},
    {"fault": "ro", "metric": "recovery_s", "max": 60},
    {"name": "healthy-p99", "phase": "healthy", "metric": "latency_p99_ms", "max": 50},
    {"name": "healthy-rate", "phase": "healthy", "metric": "rate", "min": 0.9 * RATE},
]
console = Console(width=170)


def _strings(prefix: str, ints: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(pa.scalar(prefix), pc.cast(pa.array(ints), pa.string()), "")


def generate(root: Path, rows: int, seed: int = 1) -> tuple[Path, int]:
    """A run directory of `rows` sends over three phases at RATE/s: healthy, readonly (fault `ro`), recovery.
    Returns it and how many acknowledged keys were left out of the master's read-back (what `lost` must be)."""
    rng = np.random.default_rng(seed)
    run_id = f"bench-{rows}"
    layout = c.RunLayout(root / run_id)
    layout.make_dirs()
    seconds = rows / RATE
    b1, b2 = seconds / 3, 2 * seconds / 3
    dropped = 0
    for lo in range(0, rows, PART_ROWS):
        n = min(PART_ROWS, rows - lo)
        idx = np.arange(lo, lo + n, dtype=np.int64)
        intended = T0 + (idx * (NS / RATE)).astype(np.int64)
        t = (intended - T0) / NS
        start = intended + rng.exponential(0.05e6, n).astype(np.int64)
        service = rng.lognormal(np.log(2.0), 0.5, n)
        phase_i = np.where(t < b1, 0, np.where(t < b2, 1, 2))
        u = rng.random(n)
        ro = phase_i == 1
        # readonly: SEND_OK (first 10 %), then timeouts, SLAVE_NOT_AVAILABLE, flow control
        ro_pos = (t - b1) / (b2 - b1)
        outcome = np.full(n, 0, dtype=np.int8)  # index into WORDS
        outcome[ro & (ro_pos >= 0.1) & (u < 0.3)] = 1
        outcome[ro & (ro_pos >= 0.1) & (u >= 0.3) & (u < 0.8)] = 2
        outcome[ro & (ro_pos >= 0.1) & (u >= 0.8)] = 3
        outcome[(phase_i == 2) & (t - b2 < 2.0) & (u < 0.5)] = 4
        service = np.where(outcome == 1, 3000.0, np.where(outcome == 4, 1000.0, service))
        end = start + (service * 1e6).astype(np.int64)
        words = np.array(["SEND_OK", "RemotingTooMuchRequestException", "SLAVE_NOT_AVAILABLE", "MQBrokerException",
                          "RemotingTimeoutException"])
        codes = pa.array(np.array([0, -1, 11, 2, -1], dtype=np.int32)[outcome])
        codes = pc.if_else(pc.equal(codes, -1), pa.nulls(n, pa.int32()), codes)
        remarks = pa.array(np.array([None, "sendDefaultImpl call timeout", None,
                                     "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in "
                                     "queue: 205ms, size of queue: 7", None], dtype=object)[outcome], pa.string())
        worker = idx % WORKERS
        keys = pc.binary_join_element_wise(pa.scalar(f"{run_id}:w"), pc.cast(pa.array(worker), pa.string()), ":",
                                           pc.cast(pa.array(idx), pa.string()), "")
        table = pa.table({
            "run_id": pa.array([run_id] * n, pa.string()), "worker": _strings("w", worker),
            "client": pa.array(["flood"] * n, pa.string()), "seq": pa.array(idx), "topic": pa.array(["chaos"] * n),
            "key": keys, "msg_id": pc.utf8_lpad(pc.cast(pa.array(idx), pa.string()), 32, "0"),
            "intended_ns": pa.array(intended), "start_ns": pa.array(start), "end_ns": pa.array(end),
            "latency_ms": pa.array((end - intended) / 1e6), "service_ms": pa.array((end - start) / 1e6),
            "phase": pa.array(np.array(["healthy", "readonly", "recovery"])[phase_i]),
            "outcome": pa.array(words[outcome]), "response_code": codes, "remark": remarks,
            "broker": pa.array(["broker-a"] * n), "queue_id": pa.array((idx % 8).astype(np.int32)),
            "queue_offset": pa.array(idx // 8), "attempts": pa.array(np.ones(n, dtype=np.int32)),
        })
        c.write_part(table, layout.requests, "bench", c.REQUEST_SCHEMA)
        acked = np.isin(outcome, (0, 2))
        master = (acked & (idx % DROP_EVERY != 0)) | ((outcome == 1) & (u < 0.1))
        dropped += int((acked & (idx % DROP_EVERY == 0)).sum())
        slave = master & ~ro
        for node, mask in (("master", master), ("slave", slave)):
            m = int(mask.sum())
            sel = np.nonzero(mask)[0]
            c.write_part(pa.table({
                "run_id": pa.array([run_id] * m, pa.string()), "node": pa.array([node] * m),
                "broker": pa.array(["broker-a"] * m), "topic": pa.array(["chaos"] * m),
                "queue_id": pa.array((idx[sel] % 8).astype(np.int32)), "queue_offset": pa.array(idx[sel] // 8),
                "commitlog_offset": pa.array(idx[sel] * 200), "key": keys.take(pa.array(sel)),
                "msg_id": pa.nulls(m, pa.string()), "store_ts_ms": pa.array(end[sel] // 1_000_000),
                "body_size": pa.array(np.full(m, 128, dtype=np.int32)),
            }), layout.readback, f"bench-{node}", c.READBACK_SCHEMA)
    metric_rows = [{"run_id": run_id, "node": node, "ts_ns": T0 + s * NS, "cpu_percent": 50.0,
                    "swap_bytes": 0, "write_bytes_per_s": 40e6} for s in range(int(seconds) + 1)
                   for node in ("master", "slave")]
    c.write_part(metric_rows, layout.metrics, "bench", c.METRICS_SCHEMA)
    events = [(0, "run_start", {"run_id": run_id}), (0, "load_start", {})]
    for i, (name, lo_s, hi_s) in enumerate((("healthy", 0, b1), ("readonly", b1, b2), ("recovery", b2, seconds))):
        events += [(lo_s, "phase_start", {"phase": name, "index": i}), (hi_s, "phase_end", {"phase": name})]
    events += [(b1, "fault", {"fault_id": "ro", "kind": "slave-readonly", "action": "apply", "status": "started"}),
               (b1 + 0.5, "fault", {"fault_id": "ro", "kind": "slave-readonly", "action": "verify", "status": "ok"}),
               (b2, "fault", {"fault_id": "ro", "kind": "slave-readonly", "action": "revert", "status": "ok"}),
               (seconds, "load_stop", {}), (seconds + 1, "readback_start", {}),
               (seconds + 2, "readback_end", {"nodes": ["master", "slave"]}),
               (seconds + 3, "run_end", {"status": "completed"})]
    with open(layout.events, "w") as f:
        for s, name, extra in sorted(events, key=lambda e: e[0]):
            f.write(json.dumps({"wall_ns": T0 + int(s * NS), "mono_ns": int(s * NS), "event": name, **extra}) + "\n")
    layout.scenario.write_text(yaml.safe_dump({"name": "bench", "phases": [
        {"name": "healthy"}, {"name": "readonly"}, {"name": "recovery"}], "expect": EXPECT}))
    return layout.root, dropped


class Clock:
    """Wall and CPU seconds of a block: CPU = the Spark JVM's user+system time (/proc) + this process's."""

    def __init__(self, jvm_pid: int | None) -> None:
        self.jvm_pid = jvm_pid

    def _cpu(self) -> float:
        jvm = 0.0
        if self.jvm_pid is not None:
            fields = Path(f"/proc/{self.jvm_pid}/stat").read_text().rsplit(")", 1)[1].split()
            jvm = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return jvm + time.process_time()

    def __enter__(self) -> Clock:
        self.wall, self.cpu = time.perf_counter(), self._cpu()
        return self

    def __exit__(self, *exc) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, self._cpu() - self.cpu


def jvm_pid(spark) -> int:
    return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())


def spark_jobs(spark, group: str) -> tuple[int, int]:
    """How many jobs and stages (skipped ones included) ran under job group `group`."""
    tracker = spark.sparkContext.statusTracker()
    jobs = tracker.getJobIdsForGroup(group)
    stages = sum(len(info.stageIds) for j in jobs if (info := tracker.getJobInfo(j)) is not None)
    return len(jobs), stages


def fixed_cost(spark, repeats: int = 5) -> float:
    """Best wall seconds of a trivial job with one shuffle (two stages) on 8 rows: Spark's fixed cost per job."""
    from pyspark.sql import functions as F

    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        spark.range(8).groupBy((F.col("id") % 2).alias("k")).count().collect()
        times.append(time.perf_counter() - t)
    return min(times)


def spark_percentiles(spark, run_dir: Path, jvm_aggregates: bool | None = None) -> tuple[float, dict]:
    """The job's percentiles, with the job's own code: per second (both bases), per phase and per run (exact, µs);
    `jvm_aggregates` False: with the Spark SQL expressions only (analysis/stats.py)."""
    from analysis import stats
    from analysis.frames import enrich_requests, read_parts

    t = time.perf_counter()
    spark.conf.set("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", str(stats.OBJECT_AGG_FALLBACK))
    req = read_parts(spark, sorted((run_dir / "requests").glob("part-*.parquet")), c.REQUEST_SCHEMA)
    enriched = enrich_requests(req, {run_dir.name: T0})
    # the job before the JVM aggregates takes no choice (to measure the code before this change: PYTHONPATH)
    choice = (jvm_aggregates,) if hasattr(stats, "use_jvm") else ()
    seconds = {r["sec"]: r.asDict() for r in stats.per_second(enriched, *choice).collect()}
    phases: dict[str, dict] = {}
    if hasattr(stats, "latency_percentiles"):
        for r in stats.latency_percentiles(enriched, *choice).collect():
            name = r["phase"] if r["level"] == stats.LEVEL_PHASE else "(all)"
            phases.setdefault(name, {}).update({f"{r['basis']}_{q}": r[q] for q in stats.QUANTILE_NAMES})
    else:  # the job before one scan did both bases (to measure the code before this change: PYTHONPATH)
        for basis in stats.BASIS_COLUMNS:
            counts = stats.latency_counts(enriched, basis).cache()
            for r in stats.nearest_rank(counts, ["run_id", "phase"], basis).collect():
                phases.setdefault(r["phase"], {}).update(r.asDict())
            for r in stats.nearest_rank(counts, ["run_id"], basis).collect():
                phases.setdefault("(all)", {}).update(r.asDict())
            counts.unpersist()
    return time.perf_counter() - t, {"phases": phases, "seconds": seconds}


def duckdb_percentiles(run_dir: Path) -> tuple[float, dict]:
    """The same percentiles (nearest rank: quantile_disc) on DuckDB, 2 threads, over the same Parquet files."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads TO 2")
    con.execute("SET enable_progress_bar = false")
    src = f"read_parquet('{run_dir}/requests/part-*.parquet')"
    qs = "[" + ", ".join(str(q) for q in QUANTILES) + "]"
    t = time.perf_counter()
    phases = con.execute(f"""
        SELECT run_id, phase, quantile_disc(latency_ms, {qs}) AS i, quantile_disc(service_ms, {qs}) AS a
        FROM {src} GROUP BY GROUPING SETS ((run_id, phase), (run_id))""").fetchall()
    seconds = con.execute(f"""
        SELECT CAST(floor((start_ns - {T0}) / 1e9) AS BIGINT) AS sec, count(*), max(latency_ms), max(service_ms),
               quantile_disc(latency_ms, {qs}), quantile_disc(service_ms, {qs})
        FROM {src} GROUP BY ALL""").fetchall()
    elapsed = time.perf_counter() - t
    return elapsed, {"phases": {(r[1] or "(all)"): r for r in phases}, "seconds": {r[0]: r for r in seconds}}


def agreement(spark_res: dict, duck_res: dict) -> tuple[float, float]:
    """Largest differences (ms) between Spark and DuckDB: per phase/run (Spark truncates to whole µs, so < 0.001)
    and per second (both exact: 0)."""
    names = ("p50", "p90", "p99", "p999")
    phase_worst = 0.0
    for phase, d in duck_res["phases"].items():
        s = spark_res["phases"][phase]
        for i, name in enumerate(names):
            phase_worst = max(phase_worst, abs(s[f"intended_{name}"] - d[2][i]), abs(s[f"actual_{name}"] - d[3][i]))
    sec_worst = 0.0
    assert spark_res["seconds"].keys() == duck_res["seconds"].keys()
    for sec, d in duck_res["seconds"].items():
        s = spark_res["seconds"][sec]
        assert s["sends"] == d[1], (sec, s["sends"], d[1])
        values = [(s["intended_max"], d[2]), (s["actual_max"], d[3])]
        values += [(s[f"intended_{n}"], d[4][i]) for i, n in enumerate(names)]
        values += [(s[f"actual_{n}"], d[5][i]) for i, n in enumerate(names)]
        sec_worst = max([sec_worst] + [abs(a - b) for a, b in values])
    return phase_worst, sec_worst


def dropped_keys(run_dir: Path) -> int:
    """How many acknowledged keys the generator left out of the master's read-back (what `lost` must be)."""
    import duckdb

    return duckdb.connect().execute(f"""SELECT count(*) FROM read_parquet('{run_dir}/requests/part-*.parquet')
        WHERE seq % {DROP_EVERY} = 0 AND outcome IN ('SEND_OK', 'SLAVE_NOT_AVAILABLE')""").fetchone()[0]


def best(runs: list[tuple[Clock, dict]]) -> tuple[float, float, dict]:
    """Best wall and best CPU seconds of repeated runs, and the result of the first."""
    return min(r[0].wall for r in runs), min(r[0].cpu for r in runs), runs[0][1]


def timed(clock_pid: int | None, fn, *args) -> tuple[Clock, dict]:
    with Clock(clock_pid) as clock:
        _, res = fn(*args)
    return clock, res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    ap.add_argument("--workdir", type=Path, default=None,
                    help="where the run directories go (default: a temp dir); ones already there are reused")
    ap.add_argument("--keep", action="store_true", help="keep the generated run directories")
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="rmq-chaos-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    from analysis.job import analyze
    from analysis.session import get_session

    figures = []
    load_before = os.getloadavg()
    try:
        t = time.perf_counter()
        spark = get_session()
        startup = time.perf_counter() - t
        pid = jvm_pid(spark)
        console.print(f"Spark session local[2] started in {startup:.1f} s (JVM pid {pid})")
        warm_dir, _ = generate(work / "warm-up", WARM_UP_ROWS)  # JIT and first-job costs stay out of the figures
        analyze([warm_dir], spark=spark, console=console, progress=False)
        spark_percentiles(spark, warm_dir)
        duckdb_percentiles(warm_dir)
        shutil.rmtree(warm_dir.parent)
        per_job = fixed_cost(spark)
        console.print(f"Spark's fixed cost of a trivial two-stage job: {1000 * per_job:.0f} ms")
        from analysis import stats

        jvm_used = hasattr(stats, "use_jvm") and stats.use_jvm(spark, None)
        console.print("percentiles: " + ("the JVM aggregates (analysis/jvm), and the Spark SQL expressions alone "
                                         "for comparison" if jvm_used else "the Spark SQL expressions"))
        for rows in args.rows:
            run_dir = work / f"bench-{rows}"
            if (run_dir / "events.jsonl").is_file():
                shutil.rmtree(run_dir / "report", ignore_errors=True)
                dropped = dropped_keys(run_dir)
                console.print(f"reusing {run_dir}")
            else:
                t = time.perf_counter()
                run_dir, dropped = generate(work, rows)
                console.print(f"generated {rows:,} request rows (+ read-back) in {time.perf_counter() - t:.1f} s")
            size = sum(p.stat().st_size for p in run_dir.rglob("*.parquet"))
            console.print(f"{rows:,} request rows: {size / 1e6:.0f} MB Parquet")
            group = f"bench-{rows}"
            spark.sparkContext.setJobGroup(group, "the analysis job")
            with Clock(pid) as job_clock:
                job = analyze([run_dir], spark=spark, console=console)
            spark.sparkContext.setJobGroup("other", "percentiles")
            jobs, stages = spark_jobs(spark, group)
            spark_w, spark_c, spark_res = best([timed(pid, spark_percentiles, spark, run_dir) for _ in range(REPEATS)])
            duck_w, duck_c, duck_res = best([timed(None, duckdb_percentiles, run_dir) for _ in range(REPEATS)])
            diff = agreement(spark_res, duck_res)
            sql_w = sql_c = None
            if jvm_used:
                sql_w, sql_c, sql_res = best([timed(pid, spark_percentiles, spark, run_dir, False)
                                              for _ in range(REPEATS)])
                assert agreement(sql_res, duck_res) == diff, "the SQL expressions and the JVM aggregates differ"
            lost = f"{job.results[0].loss.counts['lost']} of {dropped}"
            figures.append(dict(rows=rows, job_w=job_clock.wall, job_c=job_clock.cpu, spark_w=spark_w,
                                spark_c=spark_c, sql_w=sql_w, sql_c=sql_c, duck_w=duck_w, duck_c=duck_c, diff=diff,
                                lost=lost,
                                code=job.exit_code, jobs=jobs, stages=stages))
            if not args.keep:
                shutil.rmtree(run_dir)
        spark.stop()
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    console.print(f"load average before/after: {load_before} / {os.getloadavg()}")
    table = Table(title=f"analysis on local[2] (Spark startup {startup:.1f} s and a warm-up job not included; "
                        f"percentiles: best of {REPEATS}; wall s / CPU s)", title_justify="left")
    for col in ("rows", "whole job", "Spark percentiles", "Spark, SQL only", "DuckDB percentiles",
                "Spark/DuckDB wall / CPU",
                "job µs/row wall / CPU", "jobs / stages", "fixed-cost floor s", "max |Δ| ms phase / second",
                "lost found"):
        table.add_column(col, justify="right")
    for f in figures:
        table.add_row(f"{f['rows']:,}", f"{f['job_w']:.1f} / {f['job_c']:.1f}", f"{f['spark_w']:.2f} / "
                      f"{f['spark_c']:.2f}", "-" if f["sql_w"] is None else f"{f['sql_w']:.2f} / {f['sql_c']:.2f}",
                      f"{f['duck_w']:.2f} / {f['duck_c']:.2f}",
                      f"{f['spark_w'] / f['duck_w']:.1f}x / {f['spark_c'] / f['duck_c']:.1f}x",
                      f"{1e6 * f['job_w'] / f['rows']:.2f} / {1e6 * f['job_c'] / f['rows']:.2f}",
                      f"{f['jobs']} / {f['stages']}", f"{f['jobs'] * per_job:.1f}",
                      f"{f['diff'][0]:.6f} / {f['diff'][1]:g}", f['lost'])
    console.print(table)
    for f in figures:
        print(f"rows={f['rows']} job_s={f['job_w']:.2f} job_cpu_s={f['job_c']:.2f} spark_percentiles_s="
              f"{f['spark_w']:.2f} spark_percentiles_cpu_s={f['spark_c']:.2f} "
              + ("" if f["sql_w"] is None else f"spark_sql_only_percentiles_s={f['sql_w']:.2f} ") +
              f"duckdb_percentiles_s={f['duck_w']:.3f} "
              f"duckdb_percentiles_cpu_s={f['duck_c']:.3f} ratio_spark_duckdb={f['spark_w'] / f['duck_w']:.2f} "
              f"ratio_spark_duckdb_cpu={f['spark_c'] / f['duck_c']:.2f} jobs={f['jobs']} stages={f['stages']} "
              f"fixed_cost_per_job_s={per_job:.3f} max_diff_phase_ms={f['diff'][0]:.6f} "
              f"max_diff_second_ms={f['diff'][1]:g} lost='{f['lost']}' exit_code={f['code']}")
    if len(figures) >= 2:
        a, b = figures[0], figures[-1]
        console.print(f"scaling {a['rows']:,} -> {b['rows']:,} rows ({b['rows'] / a['rows']:g}x): whole job "
                      f"{b['job_w'] / a['job_w']:.1f}x wall, {b['job_c'] / a['job_c']:.1f}x CPU; Spark percentiles "
                      f"{b['spark_w'] / a['spark_w']:.1f}x wall")
    console.print(f"floor: each Spark job costs about {1000 * per_job:.0f} ms whatever its rows (scheduling, task "
                  "launch, shuffle files); jobs x that is the part of the job's time that does not shrink with rows")


if __name__ == "__main__":
    main()
