"""rmq-chaos's load against Apache's benchmark Producer on the same cluster, in turns (A B A B): each turn's SEND_OK/s
and the ratio (prints figures; not a test). Goal: rmq-chaos's load >= 50% of the Java Producer's SEND_OK/s.

    sudo ROCKETMQ_HOME=/work/rmq-dist/rocketmq-4.9.1 .venv/bin/python benchmarks/load_vs_java_producer.py \\
        --java-producer /work/rmq-dist/rocketmq-4.9.1/benchmark/producer.sh [--rounds 2] [--seconds 30] \\
        [--threads 64] [--size 128] [--workers N] [--serialize-type JSON]

One cluster for every turn: `rmq-chaos cluster up` on a written scenario (1 master SYNC_MASTER + SYNC_FLUSH, 1 slave,
the harness's defaults) with `--program apache` (the distribution at $ROCKETMQ_HOME; `--program emulator` for the
emulator). The 4.9.x brokers bind 0.0.0.0, so the script re-executes itself in a loopback-only network namespace
(`harness/netns.py`) and everything, the Java Producer included, runs inside it. An A turn is rmq-chaos's load
(`loads.process.LoadProcess`: closed model, `--threads` users, `--size` B bodies, no think time); its figure is the
SEND_OK rows whose send ended within the measured window (after `--warmup`), read from the run's Parquet parts. A B
turn is `org.apache.rocketmq.example.benchmark.Producer -n <namesrv> -t <topic> -w <threads> -s <size>` from the
distribution (`--java-producer`: its `benchmark/producer.sh` or the distribution's directory; the class is run
with `java` directly, with producer.sh's `-Dorg.apache.rocketmq.client.sendSmartMsg=true`, since runclass.sh's JVM
options are JDK 8's); its figure is the mean of the "Send TPS" it prints every 10 s, past the first line (its
warm-up). That Producer counts a send as soon as `send()` returns, whatever its SendStatus; on a healthy cluster
they are SEND_OK. The load average is printed with every turn: the machine may be shared.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

RMQ_CHAOS = [sys.executable, "-m", "harness.cli"]
TOPIC = "BenchTopic"
JAVA_CLASS = "org.apache.rocketmq.example.benchmark.Producer"
TPS_RE = re.compile(r"Send TPS:\s*([0-9.]+)")
JAVA_WINDOW_S = 10.0  # the benchmark Producer prints one TPS line per 10 s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", choices=("apache", "emulator"), default="apache")
    parser.add_argument("--rocketmq-home", default=os.environ.get("ROCKETMQ_HOME"))
    parser.add_argument("--java-producer", help="the distribution's benchmark/producer.sh, or the distribution dir")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=30.0, help="measured window of each turn")
    parser.add_argument("--warmup", type=float, default=10.0, help="unmeasured start of each turn")
    parser.add_argument("--threads", type=int, default=64, help="Java threads = rmq-chaos closed users")
    parser.add_argument("--size", type=int, default=128, help="body bytes")
    parser.add_argument("--workers", type=int, default=None,
                        help="rmq-chaos Locust worker processes (0: one process); default: a scenario's, one per core "
                             "where there are several")
    parser.add_argument("--serialize-type", choices=("JSON", "ROCKETMQ"), default="JSON")
    args = parser.parse_args()
    if args.program == "apache" and not (args.rocketmq_home and (Path(args.rocketmq_home) / "lib").is_dir()):
        parser.error("--rocketmq-home (or $ROCKETMQ_HOME): an Apache RocketMQ binary distribution")
    java_home = java_dist(args.java_producer) if args.java_producer else None
    if args.java_producer and java_home is None:
        parser.error(f"--java-producer {args.java_producer}: no distribution (lib/rocketmq-example-*.jar) there")
    from harness import netns
    if args.rocketmq_home:
        os.environ["ROCKETMQ_HOME"] = str(Path(args.rocketmq_home).resolve())
    if args.program == "apache" and not netns.inside():
        argv = netns.isolated_argv([sys.executable, str(Path(__file__).resolve()), *sys.argv[1:]])
        os.environ[netns.MARK_ENV] = "1"
        sys.stdout.flush()
        os.execvp(argv[0], argv)
    if args.workers is None:
        from loads.process import default_workers

        args.workers = default_workers()
    state = Path(tempfile.mkdtemp(prefix="rmq-chaos-state-"))
    work = Path(tempfile.mkdtemp(prefix="load-vs-java-"))
    os.environ["RMQ_CHAOS_STATE"] = str(state)
    scenario = work / "scenario.yaml"
    scenario.write_text(SCENARIO.format(version=version_of(args), program=args.program, topic=TOPIC))
    up = rmq_chaos("cluster", "up", str(scenario), "--program", args.program, "--detach", "--out", str(work / "cluster"))
    found = re.search(r"cluster (\S+) is up", up.stdout)
    if not found:
        raise SystemExit(f"cluster up: no cluster id in {up.stdout!r} {up.stderr!r}")
    cluster_id = found.group(1)
    turns: list[tuple[str, float]] = []
    try:
        from faults.cluster_state import read_cluster_state

        namesrv = read_cluster_state(state, cluster_id).node("namesrv")["extras"]["addr"]
        log(f"cluster {cluster_id} ({args.program}) up, name server {namesrv}")
        for r in range(1, args.rounds + 1):
            rate, cpu, median = load_turn(args, namesrv, work / f"r{r}-rmq-chaos")
            turns.append(("rmq-chaos", rate))
            log(f"round {r} A rmq-chaos load: {rate:,.0f} SEND_OK/s (median send {median:.1f} ms, load CPU "
                f"{cpu:.2f} cores; "
                f"load average {os.getloadavg()[0]:.2f})")
            if java_home is not None:
                rate = java_turn(args, java_home, namesrv, work / f"r{r}-java")
                turns.append(("java", rate))
                log(f"round {r} B Java benchmark Producer: {rate:,.0f} SEND_OK/s "
                    f"(load average {os.getloadavg()[0]:.2f})")
    finally:
        down = rmq_chaos("cluster", "down", cluster_id, check=False)
        clean = rmq_chaos("cleanup", "--state-dir", str(state), check=False)
        if down.returncode or clean.returncode:
            log(f"cluster down exit {down.returncode}, cleanup exit {clean.returncode}: {clean.stdout} {clean.stderr}")
        else:
            shutil.rmtree(state, ignore_errors=True)
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n{args.threads} threads/users, {args.size} B bodies, {args.program} {version_of(args)} SYNC_MASTER + "
          f"SYNC_FLUSH, {args.seconds:.0f} s per turn, rmq-chaos workers {args.workers}, header "
          f"{args.serialize_type}")
    print("| turn | sender | SEND_OK/s |\n|---|---|---:|")
    for i, (who, rate) in enumerate(turns, 1):
        print(f"| {i} | {who} | {rate:,.0f} |")
    ours = [r for w, r in turns if w == "rmq-chaos"]
    java = [r for w, r in turns if w == "java"]
    if java:
        print(f"\nrmq-chaos / Java: {statistics.mean(ours) / statistics.mean(java):.0%} "
              f"(per round: {', '.join(f'{a / b:.0%}' for a, b in zip(ours, java, strict=False))})")
    return 0


SCENARIO = """name: load-vs-java-producer
cluster:
  program: {program}
  version: "{version}"
  heap: "-Xms1g -Xmx1g -Xmn512m"
topic: {{name: {topic}, queues: 8}}
load:
  clients:
    - {{name: flood, users: 1}}
phases:
  - {{name: bench, duration: 10s}}
"""


def version_of(args) -> str:
    if args.program != "apache":
        return "4.9.1"
    found = re.search(r"rocketmq-(\d+\.\d+\.\d+)", str(Path(args.rocketmq_home).resolve()))
    return found.group(1) if found else "4.9.1"


def java_dist(path: str) -> Path | None:
    p = Path(path).resolve()
    for cand in (p, p.parent, p.parent.parent):
        if cand.is_dir() and list((cand / "lib").glob("rocketmq-example-*.jar")):
            return cand
    return None


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def rmq_chaos(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([*RMQ_CHAOS, *argv], cwd=REPO, text=True, capture_output=True, timeout=600)
    if check and proc.returncode != 0:
        raise SystemExit(f"rmq-chaos {' '.join(argv)}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def load_turn(args, namesrv: str, run_dir: Path) -> tuple[float, float, float]:
    """rmq-chaos's load for warm-up + window: (SEND_OK/s of the sends that ended in the window, cores it used, their
    median send time in ms)."""
    import psutil
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from loads.process import LoadProcess
    from loads.spec import LoadSpec

    spec = LoadSpec.model_validate({"topic": TOPIC, "namesrv": namesrv, "model": "closed", "users": args.threads,
                                    "clients": [{"name": "flood", "message_size": args.size,
                                                 "serialize_type": args.serialize_type}]})
    load = LoadProcess(spec, run_dir, run_dir.name, workers=args.workers)
    load.start()
    try:
        time.sleep(args.warmup)
        procs = [psutil.Process(p) for p in load.pids]
        c0, t0 = sum(sum(p.cpu_times()[:2]) for p in procs), time.time_ns()
        time.sleep(args.seconds)
        c1, t1 = sum(sum(p.cpu_times()[:2]) for p in procs), time.time_ns()
    finally:
        load.stop()
    table = ds.dataset(run_dir / "requests", format="parquet").to_table(columns=["outcome", "end_ns", "service_ms"])
    ok = pc.and_(pc.equal(table["outcome"], "SEND_OK"),
                 pc.and_(pc.greater_equal(table["end_ns"], t0), pc.less(table["end_ns"], t1)))
    window_s = (t1 - t0) / 1e9
    median = pc.approximate_median(table.filter(ok)["service_ms"]).as_py() or 0.0
    return pc.sum(ok.cast("int64")).as_py() / window_s, (c1 - c0) / window_s, median


def java_turn(args, home: Path, namesrv: str, run_dir: Path) -> float:
    """Apache's benchmark Producer for warm-up + window: the mean of its "Send TPS" lines past the first."""
    run_dir.mkdir(parents=True, exist_ok=True)
    cmd = ["java", "-Xms1g", "-Xmx1g", "-Dorg.apache.rocketmq.client.sendSmartMsg=true",
           f"-Drocketmq.client.logRoot={run_dir / 'clientlog'}", "-cp", f"{home / 'conf'}:{home / 'lib'}/*",
           JAVA_CLASS, "-n", namesrv, "-t", TOPIC, "-w", str(args.threads), "-s", str(args.size)]
    if args.serialize_type != "JSON":
        cmd.insert(1, f"-Drocketmq.serialize.type={args.serialize_type}")
    lines = max(1, round(args.seconds / JAVA_WINDOW_S)) + 1
    tps: list[float] = []
    with open(run_dir / "stdout.txt", "w") as out:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.monotonic() + args.warmup + args.seconds + 4 * JAVA_WINDOW_S
            for line in proc.stdout:
                out.write(line)
                found = TPS_RE.search(line)
                if found:
                    tps.append(float(found.group(1)))
                if len(tps) >= lines or time.monotonic() > deadline:
                    break
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    if len(tps) < 2:
        raise SystemExit(f"the Java Producer printed {len(tps)} TPS lines; see {run_dir / 'stdout.txt'}")
    return statistics.mean(tps[1:])


if __name__ == "__main__":
    sys.exit(main())
