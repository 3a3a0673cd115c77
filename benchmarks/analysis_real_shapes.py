"""Benchmark of the analysis job on real run shapes: a run directory made by a real run of a shipped scenario on the
emulator (benchmarks/scenarios/ten-minutes-consumers.yaml: open model, two consumer groups, a frozen slave), and
run directories generated from it, `--factor` times longer, whose distributions follow the real run's.

Generating: each real row becomes `factor` rows; the run's time axis (events, phases, rows) is stretched by the
factor and the copies of a row fill the gap the stretch opens after it, so rates per second stay the real run's;
every delay within a row (latency from the intended start, service time, born -> delivered) is kept exactly, and
copies after the first get their latency scaled by a factor within +-1 % (so distinct microseconds grow with the
run as in a longer real run). Keys get a copy suffix in requests, read-back and consumes alike (what the loss
checks compare stays consistent), part files are `factor` times as many (one real part -> `factor` parts, as a
longer run writes), deliveries per send and the outcome mix per phase are the real run's.

Prints, for the real run and each generated one: its shape (rows, part files, distinct latency microseconds,
latency p50/p99/max, deliveries per send, phases), the time of each step of the report job (`analysis.compute`
with one warm local[2] session), and the per-phase percentiles (both bases, exact) on Spark (the job's code: JVM
aggregates, then the SQL expressions) vs DuckDB (2 threads) over the same Parquet files, checking that all agree.
Times are wall seconds on a shared machine; the load average is printed. Asserts nothing about speed.

    .venv/bin/python benchmarks/analysis_real_shapes.py --make-run --workdir /var/tmp/a28   # a 10-minute run first
    .venv/bin/python benchmarks/analysis_real_shapes.py --run-dir /var/tmp/a28runs/<run> --factor 6
    .venv/bin/python benchmarks/analysis_real_shapes.py --run-dir <run> --factor 28 --requests-only   # 10M rows
    .venv/bin/python benchmarks/analysis_real_shapes.py --wide 1000000   # the percentiles alone, wide latencies
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parent.parent
SCENARIO = REPO / "benchmarks" / "scenarios" / "ten-minutes-consumers.yaml"
NS = 1_000_000_000
QUANTILES = (0.5, 0.99, 0.999)
console = Console(width=170)

ANCHOR = {"requests": "intended_ns", "readback": "store_ts_ms", "consumes": "born_ms"}
"""The column each row's copies are placed by (the others keep their distance to it)."""


def make_run(out: Path) -> Path:
    """A real run of SCENARIO on the emulator into `out` (no report); its run directory."""
    before = set(out.glob("*")) if out.exists() else set()
    subprocess.run([sys.executable, "-m", "harness.cli", "run", str(SCENARIO), "--out", str(out), "--no-report"],
                   check=False, cwd=REPO)
    made = sorted(p for p in set(out.glob("*")) - before if p.is_dir())
    if not made:
        raise SystemExit(f"{SCENARIO}: the run made no run directory in {out}")
    return made[-1]


def _t0(run: Path) -> tuple[int, int]:
    """Wall and monotonic ns of the run's first event."""
    first = json.loads((run / "events.jsonl").read_text(encoding="utf-8").splitlines()[0])
    return first["wall_ns"], first["mono_ns"]


def _stretch_events(src: Path, dest: Path, k: int, t0: int, m0: int) -> None:
    lines = []
    for line in src.read_text(encoding="utf-8").splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        for name, v in list(ev.items()):
            if isinstance(v, int) and not isinstance(v, bool) and name.endswith("_ns") and v > 10**17:
                ev[name] = t0 + (v - t0) * k
            elif name == "mono_ns" and isinstance(v, int):
                ev[name] = m0 + (v - m0) * k
            elif name == "duration_s" and isinstance(v, (int, float)):
                ev[name] = v * k
        lines.append(json.dumps(ev, separators=(",", ":")))
    dest.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _ints(col: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """An integer column as int64 values (nulls 0) and its null mask."""
    mask = pc.is_null(col).to_numpy(zero_copy_only=False)
    return pc.fill_null(col, 0).to_numpy(zero_copy_only=False).astype(np.int64), mask


def _copies(t: pa.Table, kind: str, k: int, j: int, t0: int, gap_ns: int, rng: np.random.Generator) -> pa.Table:
    """Copy `j` of a part's rows: anchor stretched, other times at the same distance, keys suffixed (integer
    nanoseconds throughout: no time loses precision)."""
    cols = {name: t[name] for name in t.column_names}
    times = [n for n in t.column_names if n.endswith(("_ns", "_ms")) and pa.types.is_integer(t.schema.field(n).type)]
    anchor = ANCHOR.get(kind)
    if anchor is None or anchor not in cols:  # per-second series (metrics, lag): one copy per stretched second
        for name in (n for n in times if n.endswith("_ns")):
            v, mask = _ints(cols[name])
            cols[name] = pa.array(t0 + (v - t0) * k + j * NS, mask=mask, type=pa.int64())
        return pa.table(cols, schema=t.schema)
    a, mask = _ints(cols[anchor])
    a = a * (1_000_000 if anchor.endswith("_ms") else 1)
    if kind == "requests":  # closed-model rows have no intended start: their start is the anchor
        a = np.where(mask, _ints(cols["start_ns"])[0], a)
    shift = (a - t0) * (k - 1) + j * gap_ns
    for name in times:
        v, m = _ints(cols[name])
        per = 1_000_000 if name.endswith("_ms") else 1
        cols[name] = pa.array(v + shift // per, mask=m, type=t.schema.field(name).type)
    if kind == "requests" and j > 0:
        lat = pc.fill_null(cols["latency_ms"], 0.0).to_numpy(zero_copy_only=False)
        new_lat = lat * (1 + rng.uniform(-0.01, 0.01, t.num_rows))
        intended, no_intended = _ints(cols["intended_ns"])
        end = np.where(no_intended, _ints(cols["end_ns"])[0], intended + np.round(new_lat * 1e6).astype(np.int64))
        start = _ints(cols["start_ns"])[0]
        end = np.maximum(end, start)
        cols["end_ns"] = pa.array(end, pa.int64())
        cols["latency_ms"] = pa.array((end - intended) / 1e6, mask=pc.is_null(t["latency_ms"]).to_numpy(
            zero_copy_only=False), type=pa.float64())
        cols["service_ms"] = pa.array((end - start) / 1e6, mask=pc.is_null(t["service_ms"]).to_numpy(
            zero_copy_only=False), type=pa.float64())
        cols["seq"] = pc.add(pc.multiply(t["seq"], k), j)
    if j > 0:
        for name in ("key", "msg_id"):
            if name in cols:
                cols[name] = pc.binary_join_element_wise(cols[name], pa.scalar(f".{j}"), "")
    return pa.table(cols, schema=t.schema)


def _copy_gap_ns(real: Path, t0: int, rows: int) -> int:
    """A copy's offset: the real run's mean gap between sends (its span over its request rows)."""
    events = [json.loads(x) for x in (real / "events.jsonl").read_text().splitlines() if x.strip()]
    return max(1, int((max(e["wall_ns"] for e in events) - t0) / max(rows, 1)))


def generate(real: Path, dest_root: Path, k: int, seed: int = 1) -> Path:
    """A run directory like `real`, `k` times longer (see the module's docstring)."""
    dest = dest_root / real.name
    if dest.exists():
        shutil.rmtree(dest)
    t0, m0 = _t0(real)
    rng = np.random.default_rng(seed)
    rows = sum(pq.ParquetFile(p).metadata.num_rows for p in (real / "requests").rglob("part-*.parquet"))
    gap_ns = _copy_gap_ns(real, t0, rows)
    for src in sorted(real.rglob("*")):
        rel = src.relative_to(real)
        if rel.parts[0] == "report" or src.is_dir():
            continue
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.name == "events.jsonl":
            _stretch_events(src, out, k, t0, m0)
        elif src.suffix == ".parquet" and src.name.startswith("part-"):
            try:
                table = pq.read_table(src)
            except Exception:  # noqa: BLE001 - a torn part stays torn (copied as it is)
                shutil.copy2(src, out)
                continue
            worker, n = src.stem[len("part-"):].rsplit("-", 1)
            for j in range(k):
                part = out.parent / f"part-{worker}-{int(n) * k + j:06d}.parquet"
                pq.write_table(_copies(table, rel.parts[0], k, j, t0, gap_ns, rng), part)
        else:
            shutil.copy2(src, out)
    return dest


def generate_requests(real: Path, dest_root: Path, k: int, seed: int = 1, per_file: int = 4) -> Path:
    """The request rows alone of `generate(real, dest_root, k)`, `per_file` copies to a Parquet file (a run's
    parts as its end compacts them): what the per-phase percentiles read, at a one-hour run's size in seconds."""
    dest = dest_root / f"{real.name}-requests"
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "requests").mkdir(parents=True)
    t0, m0 = _t0(real)
    _stretch_events(real / "events.jsonl", dest / "events.jsonl", k, t0, m0)
    table = pq.read_table(sorted((real / "requests").rglob("part-*.parquet")))
    gap_ns = _copy_gap_ns(real, t0, table.num_rows)
    rng = np.random.default_rng(seed)
    for f in range(0, k, per_file):
        copies = [_copies(table, "requests", k, j, t0, gap_ns, rng) for j in range(f, min(k, f + per_file))]
        pq.write_table(pa.concat_tables(copies), dest / "requests" / f"part-w0-{f:06d}.parquet")
    return dest


def percentiles_only(spark, run: Path, repeats: int = 3) -> None:
    """Best of `repeats` of the per-phase percentiles on Spark (JVM aggregates, one warm session) and DuckDB."""
    s = shape(run)
    spark_phases(spark, run, True)  # warm-up
    jvm = [spark_phases(spark, run, True) for _ in range(repeats)]
    duck = [duckdb_phases(run) for _ in range(repeats)]
    jvm_s, duck_s = min(t for t, _ in jvm), min(t for t, _ in duck)
    console.print(f"{run.name}: {s['rows']:,} request rows, {s['parts']} part files, {s['distinct_us']:,} distinct "
                  f"latency µs, p50 {s['p50']:.1f} ms, p99 {s['p99']:.1f} ms, max {s['max']:.0f} ms; per-phase "
                  f"percentiles best of {repeats}: Spark (JVM aggregates) {jvm_s:.2f} s "
                  f"({', '.join(f'{t:.2f}' for t, _ in jvm)}), DuckDB {duck_s:.2f} s: {jvm_s / duck_s:.1f}x; worst "
                  f"difference {worst_difference(jvm[0][1], duck[0][1]):.4f} ms (load average "
                  f"{os.getloadavg()[0]:.1f})", soft_wrap=True)


def shape(run: Path) -> dict:
    import duckdb

    con = duckdb.connect()
    req = f"read_parquet('{run}/requests/**/part-*.parquet')"
    n, distinct, p50, p99, mx = con.execute(f"""SELECT count(*), count(DISTINCT CAST(floor(latency_ms * 1000)
        AS BIGINT)), quantile_disc(latency_ms, 0.5), quantile_disc(latency_ms, 0.99), max(latency_ms) FROM {req}""").fetchone()
    consumes = list((run / "consumes").rglob("part-*.parquet")) if (run / "consumes").exists() else []
    deliveries = con.execute(f"SELECT count(*) FROM read_parquet('{run}/consumes/**/part-*.parquet')").fetchone()[0] \
        if consumes else 0
    phases = [r[0] for r in con.execute(f"SELECT phase, min(intended_ns) m FROM {req} GROUP BY 1 ORDER BY m").fetchall()]
    return {"rows": n, "parts": sum(1 for _ in run.rglob("part-*.parquet")), "distinct_us": distinct,
            "p50": p50, "p99": p99, "max": mx, "per_send": deliveries / n if n else 0, "phases": phases,
            "mb": sum(p.stat().st_size for p in run.rglob("*.parquet")) / 1e6}


def job_steps(spark, run: Path) -> list[tuple[str, float]]:
    """Seconds of each step of `analysis.compute` on `run`, and of writing its report."""
    from analysis.compute import compute
    from analysis.outputs import write_run_report
    from analysis.rundir import open_run_dir

    times: list[tuple[str, float]] = []
    mark = [None, time.perf_counter()]

    def step(name: str) -> None:
        now = time.perf_counter()
        if mark[0] is not None:
            times.append((mark[0], now - mark[1]))
        mark[:] = [name, now]

    results = compute(spark, [open_run_dir(run)], step=step)
    step("writing the report")
    write_run_report(results[0], None)
    step("")
    return times


def spark_phases(spark, run: Path, jvm: bool) -> tuple[float, dict]:
    from analysis import contract as c
    from analysis import stats
    from analysis.frames import enrich_requests, read_parts

    t = time.perf_counter()
    req = read_parts(spark, sorted((run / "requests").rglob("part-*.parquet")), c.REQUEST_SCHEMA)
    run_id = req.select("run_id").first()["run_id"]
    enriched = enrich_requests(req, {run_id: _t0(run)[0]})
    out = {}
    for r in stats.latency_percentiles(enriched, jvm).collect():
        name = r["phase"] if r["level"] == stats.LEVEL_PHASE else "(all)"
        out.setdefault(name, {}).update({f"{r['basis']}_{q}": r[q] for q in ("p50", "p99", "p999")})
    return time.perf_counter() - t, out


def duckdb_phases(run: Path) -> tuple[float, dict]:
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads TO 2")
    qs = "[" + ", ".join(str(q) for q in QUANTILES) + "]"
    t = time.perf_counter()
    rows = con.execute(f"""SELECT phase, GROUPING(phase) g, quantile_disc(latency_ms, {qs}),
        quantile_disc(service_ms, {qs}) FROM read_parquet('{run}/requests/**/part-*.parquet')
        GROUP BY GROUPING SETS ((phase), ())""").fetchall()
    out = {}
    names = ("p50", "p99", "p999")
    for phase, g, i, a in rows:
        out["(all)" if g else phase] = {**{f"intended_{q}": v for q, v in zip(names, i, strict=True)},
                                        **{f"actual_{q}": v for q, v in zip(names, a, strict=True)}}
    return time.perf_counter() - t, out


def worst_difference(a: dict, b: dict) -> float:
    assert a.keys() == b.keys(), (sorted(map(str, a)), sorted(map(str, b)))
    return max(abs(a[p][k] - b[p][k]) for p in a for k in a[p] if a[p][k] is not None and b[p][k] is not None)


def wide_spread(spark, n: int, parts: int = 16) -> tuple[float, float]:
    """Seconds of the per-phase percentiles, JVM aggregates then SQL expressions, on `n` distinct latencies spread
    log-uniformly over 12 ms..140 s (the issue's real run) in one phase, over `parts` partitions (cached first)."""
    import math

    from pyspark.sql import functions as F

    from analysis import stats

    spread = F.exp(F.lit(math.log(12.0)) + (F.col("id") * 7919 % n) / F.lit(n) * F.lit(math.log(140_000 / 12)))
    df = spark.range(n, numPartitions=parts).select(
        F.lit("r").alias("run_id"), F.lit("wide").alias("phase"), F.lit(0).alias("sec"),
        spread.alias("latency_ms"), (spread / 2).alias("service_ms")).cache()
    df.count()
    times = []
    for jvm in (True, False):
        t = time.perf_counter()
        stats.latency_percentiles(df, jvm).collect()
        times.append(time.perf_counter() - t)
    df.unpersist()
    return times[0], times[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run-dir", type=Path, help="a real run directory (default: make one with --make-run)")
    ap.add_argument("--make-run", action="store_true", help=f"first run {SCENARIO.name} on the emulator")
    ap.add_argument("--factor", type=int, nargs="*", default=[6], help="generated runs this many times longer")
    ap.add_argument("--workdir", type=Path, default=Path("/var/tmp/analysis-real-shapes"))
    ap.add_argument("--keep", action="store_true", help="keep the generated run directories")
    ap.add_argument("--generated-only", action="store_true", help="time only the generated runs (not the real one)")
    ap.add_argument("--requests-only", action="store_true", help="generate only the request rows (compacted) and "
                    "time only the per-phase percentiles, Spark vs DuckDB (--factor 28: about 10M rows)")
    ap.add_argument("--wide", type=int, metavar="N", help="only time the per-phase percentiles on N distinct "
                                                          "latencies spread over 12 ms..140 s, 16 partitions")
    args = ap.parse_args()
    if args.wide:
        from analysis.session import get_session

        spark = get_session("local[2]")
        jvm_s, sql_s = wide_spread(spark, args.wide)
        console.print(f"{args.wide:,} distinct latencies, 12 ms..140 s, 16 partitions: JVM aggregates {jvm_s:.1f} s, "
                      f"SQL expressions {sql_s:.1f} s (load average {os.getloadavg()[0]:.1f})")
        spark.stop()
        return
    real = make_run(args.workdir / "real") if args.make_run else args.run_dir
    if real is None or not (real / "events.jsonl").exists():
        raise SystemExit(f"{real}: not a run directory (events.jsonl missing); give --run-dir or --make-run")
    if args.requests_only:
        from analysis.session import get_session

        spark = get_session("local[2]")
        for k in args.factor:
            console.print(f"generating the request rows x{k} from {real.name} ...")
            generated = generate_requests(real, args.workdir / f"x{k}", k)
            percentiles_only(spark, generated)
            if not args.keep:
                shutil.rmtree(generated.parent, ignore_errors=True)
        spark.stop()
        return
    runs = [] if args.generated_only else [("real", real)]
    for k in args.factor:
        console.print(f"generating x{k} from {real.name} ...")
        runs.append((f"generated x{k}", generate(real, args.workdir / f"x{k}", k)))
    if not runs:
        raise SystemExit("--generated-only needs at least one --factor")
    from analysis.session import get_session

    spark = get_session("local[2]")
    console.print(f"load average before: {os.getloadavg()}")
    shapes = Table(title="run shapes")
    for col in ("run", "rows", "part files", "MB", "distinct µs", "p50 ms", "p99 ms", "max ms", "deliveries/send",
                "phases"):
        shapes.add_column(col)
    steps, pct = {}, Table(title="per-phase percentiles: Spark vs DuckDB (wall s)")
    for col in ("run", "Spark, JVM aggregates", "Spark, SQL only", "DuckDB", "JVM / DuckDB", "worst diff ms"):
        pct.add_column(col)
    for label, run in runs:
        s = shape(run)
        shapes.add_row(label, f"{s['rows']:,}", str(s["parts"]), f"{s['mb']:.0f}", f"{s['distinct_us']:,}",
                       f"{s['p50']:.1f}", f"{s['p99']:.1f}", f"{s['max']:.0f}", f"{s['per_send']:.2f}",
                       " ".join(p or "-" for p in s["phases"]))
        t = time.perf_counter()
        steps[label] = job_steps(spark, run) + [("(whole job)", time.perf_counter() - t)]
        jvm_s, jvm_r = spark_phases(spark, run, True)
        sql_s, sql_r = spark_phases(spark, run, False)
        duck_s, duck_r = duckdb_phases(run)
        diff = max(worst_difference(jvm_r, duck_r), worst_difference(sql_r, duck_r))
        pct.add_row(label, f"{jvm_s:.1f}", f"{sql_s:.1f}", f"{duck_s:.2f}", f"{jvm_s / duck_s:.1f}x", f"{diff:.3f}")
        console.print(f"{label}: {s} steps {[(n, round(x, 1)) for n, x in steps[label]]} percentiles JVM "
                      f"{jvm_s:.1f} s, SQL {sql_s:.1f} s, DuckDB {duck_s:.2f} s, worst diff {diff:.4f} ms "
                      f"(load average {os.getloadavg()[0]:.1f})", soft_wrap=True)
    console.print(shapes)
    table = Table(title="report job per step (wall s, one warm local[2] session)")
    table.add_column("step")
    for label, _ in runs:
        table.add_column(label)
    for name, _ in steps[runs[0][0]]:
        table.add_row(name, *[f"{dict(steps[lb]).get(name, 0):.1f}" for lb, _ in runs])
    console.print(table)
    console.print(pct)
    console.print(f"load average after: {os.getloadavg()}")
    spark.stop()
    if not args.keep:
        for label, run in runs:
            if label != "real":
                shutil.rmtree(run.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
