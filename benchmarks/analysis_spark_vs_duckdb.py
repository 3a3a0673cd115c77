"""Benchmark of the analysis job: generated run directories of 1M and 10M request rows, the whole Spark job on
local[2], the same latency percentiles on Spark alone and on DuckDB (2 threads) over the same Parquet files.

Prints the figures and their ratios; asserts nothing about speed (goals: job <= 60 s at 10M rows, Spark <= 3x
DuckDB, time linear in rows). Also checks that Spark and DuckDB agree on every percentile (both nearest rank).

    .venv/bin/python benchmarks/analysis_spark_vs_duckdb.py                    # 1M and 10M rows
    .venv/bin/python benchmarks/analysis_spark_vs_duckdb.py --rows 1000000 --keep --workdir /tmp/bench
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


def spark_percentiles(spark, run_dir: Path) -> tuple[float, dict]:
    """The job's percentiles, with the job's own code: per second (both bases), per phase and per run (exact, µs)."""
    from pyspark import StorageLevel

    from analysis import stats
    from analysis.frames import enrich_requests, read_parts

    t = time.perf_counter()
    spark.conf.set("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", str(stats.OBJECT_AGG_FALLBACK))
    req = read_parts(spark, sorted((run_dir / "requests").glob("part-*.parquet")), c.REQUEST_SCHEMA)
    enriched = enrich_requests(req, {run_dir.name: T0})
    seconds = {r["sec"]: r.asDict() for r in stats.per_second(enriched).collect()}
    phases: dict[str, dict] = {}
    for basis in stats.BASIS_COLUMNS:
        counts = stats.latency_counts(enriched, basis).persist(StorageLevel.MEMORY_AND_DISK)
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--workdir", type=Path, default=None, help="where the run directories go (default: a temp dir)")
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
        console.print(f"Spark session local[2] started in {startup:.1f} s")
        warm_dir, _ = generate(work / "warm-up", WARM_UP_ROWS)  # JIT and first-job costs stay out of the figures
        analyze([warm_dir], spark=spark, console=console, progress=False)
        spark_percentiles(spark, warm_dir)
        duckdb_percentiles(warm_dir)
        shutil.rmtree(warm_dir.parent)
        for rows in args.rows:
            t = time.perf_counter()
            run_dir, dropped = generate(work, rows)
            gen = time.perf_counter() - t
            size = sum(p.stat().st_size for p in run_dir.rglob("*.parquet"))
            console.print(f"generated {rows:,} request rows (+ read-back) in {gen:.1f} s, {size / 1e6:.0f} MB Parquet")
            t = time.perf_counter()
            job = analyze([run_dir], spark=spark, console=console)
            job_s = time.perf_counter() - t
            spark_runs = [spark_percentiles(spark, run_dir) for _ in range(REPEATS)]
            duck_runs = [duckdb_percentiles(run_dir) for _ in range(REPEATS)]
            spark_s, spark_res = min(spark_runs, key=lambda x: x[0])
            duck_s, duck_res = min(duck_runs, key=lambda x: x[0])
            diff = agreement(spark_res, duck_res)
            lost = f"{job.results[0].loss.counts['lost']} of {dropped}"
            figures.append((rows, job_s, spark_s, duck_s, diff, lost, job.exit_code))
            if not args.keep:
                shutil.rmtree(run_dir)
        spark.stop()
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    console.print(f"load average before/after: {load_before} / {os.getloadavg()}")
    table = Table(title=f"analysis on local[2] (Spark startup {startup:.1f} s and a warm-up job not included; "
                        f"percentiles: best of {REPEATS})", title_justify="left")
    for col in ("rows", "whole job s", "Spark percentiles s", "DuckDB percentiles s", "Spark/DuckDB",
                "job/DuckDB", "job µs/row", "max |Δ| ms phase / second", "lost found"):
        table.add_column(col, justify="right")
    for rows, job_s, spark_s, duck_s, (d_phase, d_sec), lost, _ in figures:
        table.add_row(f"{rows:,}", f"{job_s:.1f}", f"{spark_s:.1f}", f"{duck_s:.2f}", f"{spark_s / duck_s:.1f}x",
                      f"{job_s / duck_s:.1f}x", f"{1e6 * job_s / rows:.2f}", f"{d_phase:.6f} / {d_sec:g}", lost)
    console.print(table)
    for rows, job_s, spark_s, duck_s, (d_phase, d_sec), lost, code in figures:
        print(f"rows={rows} job_s={job_s:.2f} spark_percentiles_s={spark_s:.2f} duckdb_percentiles_s={duck_s:.3f} "
              f"ratio_spark_duckdb={spark_s / duck_s:.2f} ratio_job_duckdb={job_s / duck_s:.2f} "
              f"max_diff_phase_ms={d_phase:.6f} max_diff_second_ms={d_sec:g} lost='{lost}' exit_code={code}")
    if len(figures) >= 2:
        (r1, j1, s1, *_), (r2, j2, s2, *_) = figures[0], figures[-1]
        console.print(f"scaling {r1:,} -> {r2:,} rows ({r2 / r1:g}x): whole job {j2 / j1:.1f}x, "
                      f"Spark percentiles {s2 / s1:.1f}x")


if __name__ == "__main__":
    main()
