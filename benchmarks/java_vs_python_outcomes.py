"""The Java client against the Python producer on the same real broker and fault: per-phase outcome classes side by
side (prints figures; not a test).

A Java run stands the scenario's cluster up on the Apache distribution (`rmq-chaos cluster up SCENARIO --program
apache --detach`), sends the scenario's flood + probe with the Java client itself (`benchmarks/java/FloodProbe.java`
through Java's single-file source launcher, `$ROCKETMQ_HOME/lib/*` on the class path), applies each phase's faults at
the phase start with `rmq-chaos fault apply`, stops the load at the end of the last phase, and takes the cluster down
(`rmq-chaos cluster down`, then `rmq-chaos cleanup` must find nothing). A Python run is `rmq-chaos run SCENARIO
--program apache --no-report` (rmq-chaos's own load, `remoting.producer`). Everything runs inside one network
namespace with only loopback (the 4.9.1 brokers bind 0.0.0.0; `harness/netns.py`), with a temporary state dir.

    sudo ROCKETMQ_HOME=/work/rmq-dist/rocketmq-4.9.1 .venv/bin/python benchmarks/java_vs_python_outcomes.py \\
        --rounds 2 --order java-own,python-own,java-shared,python-shared --out /work/runs-java
    .venv/bin/python benchmarks/java_vs_python_outcomes.py --analyze /work/runs-java/<dir>...   # tables only

`--order` names the runs of one round: `java-own` (the probe in its own client instance, as the field incident's
probe program was), `java-shared` (the probe's producer has the flood's instanceName: the same MQClientInstance, the
same channel to the broker), `python-own` (the scenario as it is: its probe names its own `instance`), `python-shared`
(a copy of the scenario whose probe has `instance: flood`). The scenario is copied once per batch, so edits made to
it meanwhile do not mix into the batch. Tables: per phase (warm-up
excluded; the fault's phase also split at `--split-s`) and client, the count of each outcome class (word, and the
response code of an MQClientException / MQBrokerException), one column per run; `--detail` adds the cause of each
MQClientException and the median time to the failure.

Several broker groups (a scenario with `cluster.groups`, e.g. scenarios/slave-readonly-two-groups.yaml, an open-model
flood and a matrix): `--variant` names the matrix runs to make (default every one; `off`, `retry_not_store_ok=off`
or the full name), each round runs every kind for every variant; the Python run is `rmq-chaos run --only
<variant>`, the Java run gets the variant's flood: its open model (`--rate`, `--max-threads`, `--max-lag-ms`) and
its `retry_another_broker_when_not_store_ok` (`--retry-another-broker`), and a pre-warm of `--java-prewarm` small
sends before its load (a cold JVM on a busy machine took seconds per send at first, and the open flood then piled up
hundreds of sends that timed out and closed the client's channels: a storm of the client's own making).
`--client-home DIR` chooses whose `lib/*` the Java client comes from (e.g. the 5.3.0 distribution), the brokers are
always `$ROCKETMQ_HOME`'s. Where the rows name more than one broker group the tables add, per phase and group, the
share of the phase's sends that ended on the group and of each outcome class there
(`java_vs_python_tables.group_report`):

    sudo ROCKETMQ_HOME=/work/rmq-dist/rocketmq-4.9.1 .venv/bin/python benchmarks/java_vs_python_outcomes.py \\
        --scenario scenarios/slave-readonly-two-groups.yaml --rounds 1 --order java-own,python-own \\
        --client-home /work/rmq-dist/rocketmq-5.3.0 --out /var/tmp/jvp2"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from java_vs_python_tables import group_report, read_jsonl, report, waves
from scenario_variants import pick_variants, snapshot_scenario, variant_file, variant_value

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

FLOOD_PROBE = REPO / "benchmarks" / "java" / "FloodProbe.java"
RMQ_CHAOS = [sys.executable, "-m", "harness.cli"]
READY_TIMEOUT_S = 120.0
RUN_KINDS = ("java-own", "java-shared", "python-own", "python-shared")
FAULT_APPLY_LEAD = """import sys
from harness.cli import main
import faults.registry, faults.cluster_state, rich.console  # noqa: F401  (imported before the cue)
sys.stdout.write("armed\\n"); sys.stdout.flush()
sys.stdin.readline()
sys.exit(main(sys.argv[1:]))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default=str(REPO / "scenarios" / "slave-readonly-default.yaml"))
    parser.add_argument("--rocketmq-home", default=os.environ.get("ROCKETMQ_HOME"))
    parser.add_argument("--client-home", metavar="DIR",
                        help="the distribution whose lib/* the Java client comes from (default: --rocketmq-home); "
                             "the brokers always run from --rocketmq-home")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME",
                        help="a run of the scenario's matrix (full name, `key=value` or the value; repeat or "
                             "comma-separate; default: every run)")
    parser.add_argument("--broker", choices=("apache", "silent"), default="apache",
                        help="the scenario's cluster on the Apache distribution with its faults, or a scripted broker "
                             "that stops answering sends at the fault's phase (client side only)")
    parser.add_argument("--floodprobe-arg", action="append", default=[], metavar="ARG",
                        help="an extra FloodProbe argument, e.g. --floodprobe-arg=--warm-failures --floodprobe-arg=30")
    parser.add_argument("--java-prewarm", type=int, default=2000, metavar="N",
                        help="open-model flood: FloodProbe's --prewarm-sends (128 B sends before the load, no rows, so "
                             "the JVM's send path is compiled before the first timed send; 0: none)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--order", default="java-own,python-own",
                        help=f"runs of one round, from {', '.join(RUN_KINDS)}")
    parser.add_argument("--out", default="/work/runs-java")
    parser.add_argument("--split-s", type=float, default=15.0, help="split the fault's phase this far in")
    parser.add_argument("--detail", action="store_true", help="also MQClientException causes and failure times")
    parser.add_argument("--compact", action="store_true", help="one table for every phase and client")
    parser.add_argument("--waves", action="store_true",
                        help="also the flood's failures in the fault's phase as waves: how far apart their sends "
                             "started, and each send's outcome in start order")
    parser.add_argument("--analyze", nargs="+", metavar="DIR", help="only print the tables of these result dirs")
    args = parser.parse_args()
    if args.analyze:
        dirs = [Path(d) for d in args.analyze]
        print(report(dirs, args.split_s, args.detail, args.compact))
        groups = group_report(dirs, args.split_s)
        if groups:
            print("\n" + groups)
        if args.waves:
            print(waves(dirs))
        return 0
    order = [{"python": "python-own"}.get(k.strip(), k.strip()) for k in args.order.split(",") if k.strip()]
    bad = [k for k in order if k not in RUN_KINDS]
    if bad:
        parser.error(f"--order: {', '.join(bad)}; allowed: {', '.join(RUN_KINDS)}")
    if not args.rocketmq_home or not (Path(args.rocketmq_home) / "lib").is_dir():
        parser.error("--rocketmq-home (or $ROCKETMQ_HOME): an Apache RocketMQ binary distribution (its client jars)")
    client_home = Path(args.client_home or args.rocketmq_home).resolve()
    if not (client_home / "lib").is_dir():
        parser.error(f"--client-home {client_home}: no lib/ (an Apache RocketMQ binary distribution)")
    variants = pick_variants(args.scenario, [v.strip() for x in args.variant for v in x.split(",") if v.strip()],
                             parser)
    from harness import netns
    if args.broker == "apache" and not netns.inside():
        os.environ["ROCKETMQ_HOME"] = str(Path(args.rocketmq_home).resolve())
        argv = netns.isolated_argv([sys.executable, str(Path(__file__).resolve()), *sys.argv[1:]])
        os.environ[netns.MARK_ENV] = "1"
        os.execvp(argv[0], argv)
    os.environ["ROCKETMQ_HOME"] = str(Path(args.rocketmq_home).resolve())
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    FloodProbeProcess.extra_args = args.floodprobe_arg
    FloodProbeProcess.client_home = str(client_home)
    FloodProbeProcess.prewarm = args.java_prewarm
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    batch = out / time.strftime("%Y%m%dT%H%M%S")
    batch.mkdir()
    scenarios = snapshot_scenario(Path(args.scenario), batch)
    done: list[Path] = []
    for r in range(1, args.rounds + 1):
        for variant in variants:
            for kind in order:
                state = Path(tempfile.mkdtemp(prefix="rmq-chaos-state-"))
                os.environ["RMQ_CHAOS_STATE"] = str(state)
                run_dir = batch / (f"r{r}-{kind}" + (f"-{variant_value(variant)}" if variant else ""))
                run_dir.mkdir()
                log(f"round {r}: {kind} {variant or ''} -> {run_dir} (load average {os.getloadavg()[0]:.2f})")
                before = leftovers(state)
                try:
                    program, probe = kind.split("-")
                    if args.broker == "silent":
                        silent_run(scenarios["own"], run_dir, kind)
                    elif program == "python":
                        python_run(scenarios[probe], run_dir, kind, variant)
                    else:
                        java_run(scenarios["own"], run_dir, probe, variant)
                    done.append(run_dir)
                finally:
                    check_clean(state, run_dir, before)
                print(report([run_dir], args.split_s, args.detail), flush=True)
    text = report(done, args.split_s, args.detail, args.compact) + ("\n\n" + waves(done) if args.waves else "")
    groups = group_report(done, args.split_s)
    if groups:
        text += "\n\n" + groups
    (batch / "report.md").write_text(text)
    print(text)
    return 0


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def rmq_chaos(*argv: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run([*RMQ_CHAOS, *argv], cwd=REPO, text=True, capture_output=True, **kw)
    if check and proc.returncode != 0:
        raise RuntimeError(f"rmq-chaos {' '.join(argv)}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


# -- a Java run ------------------------------------------------------------------------------------------------------

class FloodProbeProcess:
    """benchmarks/java/FloodProbe.java with the scenario's flood and probe, started and ready (`ready_wall_ns`)."""

    extra_args: list[str] = []
    client_home: str | None = None  # whose lib/* (default $ROCKETMQ_HOME)
    prewarm = 0  # open-model flood: --prewarm-sends

    def __init__(self, scenario, namesrv: str, run_dir: Path, probe_mode: str) -> None:
        home = self.client_home or os.environ["ROCKETMQ_HOME"]
        clients = {c.name: c for c in scenario.load.clients}
        if "probe" not in clients:
            probe_mode = "none"
        cmd = ["java", "-Xms256m", "-Xmx512m", f"-Drocketmq.client.logRoot={run_dir / 'clientlog'}",
               "-cp", f"{home}/lib/*", str(FLOOD_PROBE), "--namesrv", namesrv, "--out", str(run_dir / "sends.csv"),
               "--run-id", run_dir.name, "--probe-mode", probe_mode]
        if "flood" in clients:
            f = clients["flood"]
            cmd += ["--flood-timeout-ms", str(round(f.timeout * 1000)), "--flood-size", str(f.message_size)]
            if (f.model or scenario.load.model) == "open":
                open_clients = [c for c in scenario.load.clients if (c.model or scenario.load.model) == "open"]
                rate = f.rate or (f.share or 1.0 / len(open_clients)) * scenario.load.rate
                users = f.users or 1
                cmd += ["--rate", f"{rate:g}", "--flood-threads", str(users),
                        "--max-threads", str(f.max_users or users), "--max-lag-ms",
                        str(round(scenario.load.max_lag * 1000))]
                if self.prewarm:
                    cmd += ["--prewarm-sends", str(self.prewarm)]
            else:
                cmd += ["--flood-threads", str(f.users)]
            if f.retry_another_broker_when_not_store_ok is not None:
                cmd += ["--retry-another-broker", str(f.retry_another_broker_when_not_store_ok).lower()]
        if "probe" in clients:
            p = clients["probe"]
            cmd += ["--probe-timeout-ms", str(round(p.timeout * 1000)), "--probe-size", str(p.message_size)]
        cmd += self.extra_args
        self.command = cmd
        self.lines: list[str] = []
        self._out = open(run_dir / "floodprobe.out", "w")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, cwd=run_dir)
        ready = threading.Event()

        def pump() -> None:
            for line in self.proc.stdout:
                self._out.write(line)
                self._out.flush()
                self.lines.append(line.rstrip("\n"))
                if line.startswith("ready "):
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(READY_TIMEOUT_S) or not any(x.startswith("ready ") for x in self.lines):
            self.kill()
            raise RuntimeError("FloodProbe did not start: " + " | ".join(self.lines[-20:]))
        self.ready_wall_ns = int(next(x for x in self.lines if x.startswith("ready ")).split()[1])

    def stop(self) -> int:
        """No new sends; the ones in flight finish; every row written."""
        self.proc.stdin.write("stop\n")
        self.proc.stdin.flush()
        return self.proc.wait(timeout=120)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()


def timeline(phases, prepare, fire) -> list[dict]:
    """The phases one after another from now: `prepare(phase)` ahead of a phase's start, `fire(phase, prepared)` at
    it; returns each phase's start (wall ns), duration and faults."""
    done = []
    at = time.monotonic()
    for phase in phases:
        prepared = prepare(phase)
        sleep_until(at)
        done.append({"name": phase.name, "start_wall_ns": time.time_ns(), "duration_s": phase.duration,
                     "faults": [f.id for f in phase.faults]})
        fire(phase, prepared)
        at += phase.duration
    sleep_until(at)
    return done


def java_run(scenario_path: str, run_dir: Path, probe_mode: str, variant: str | None = None) -> None:
    """The scenario's cluster on the Apache distribution, FloodProbe's load, the faults by `rmq-chaos fault apply`."""
    from faults.cluster_state import read_cluster_state
    from faults.journal import default_state_dir
    from harness.scenario import load_scenarios

    scenario_path = variant_file(scenario_path, variant, run_dir)
    scenario = load_scenarios(scenario_path)[0]
    client_home = FloodProbeProcess.client_home or os.environ["ROCKETMQ_HOME"]
    meta: dict = {"kind": f"java-{probe_mode}", "broker": "apache", "scenario": scenario.name, "variant": variant,
                  "client_home": client_home, "client_version": client_version(client_home),
                  "load_average": os.getloadavg(), "phases": [], "faults": []}
    up = rmq_chaos("cluster", "up", scenario_path, "--program", "apache", "--detach", "--out", str(run_dir / "cluster"))
    found = re.search(r"cluster (\S+) is up", up.stdout)
    if not found:
        raise RuntimeError(f"cluster up: no cluster id in {up.stdout!r} {up.stderr!r}")
    cluster_id = meta["cluster_id"] = found.group(1)
    load: FloodProbeProcess | None = None

    def fire(_phase, armed) -> None:
        for _, lead in armed:
            lead.stdin.write("go\n")
            lead.stdin.flush()
        for f, lead in armed:
            text, _ = lead.communicate(timeout=120)
            meta["faults"].append({"id": f.id, "kind": f.kind, "target": f.target, "exit": lead.returncode,
                                   "output": text[-4000:]})
            if lead.returncode != 0:
                raise RuntimeError(f"fault {f.id}: exit {lead.returncode}: {text[-2000:]}")

    try:
        state = read_cluster_state(default_state_dir(), cluster_id)
        meta["run_id"] = state.run_id
        meta["nodes"] = {n["name"]: n.get("extras", {}).get("addr") for n in state.nodes}
        load = FloodProbeProcess(scenario, state.node("namesrv")["extras"]["addr"], run_dir, probe_mode)
        meta["command"], meta["load_start_wall_ns"] = load.command, load.ready_wall_ns
        meta["phases"] = timeline(scenario.phases, lambda ph: [arm_fault(f, run_dir) for f in ph.faults], fire)
        meta["load_stop_wall_ns"] = time.time_ns()
        meta["floodprobe_exit"] = load.stop()
        meta["floodprobe_stdout"] = load.lines
        meta["fault_events"] = read_jsonl(run_dir / "events.jsonl")
    finally:
        if load is not None:
            load.kill()
        (run_dir / "run.json").write_text(json.dumps(meta, indent=1, default=str))
        down = rmq_chaos("cluster", "down", cluster_id, check=False, timeout=300)
        (run_dir / "down.txt").write_text(down.stdout + down.stderr)
        if down.returncode != 0:
            log(f"cluster down {cluster_id}: exit {down.returncode}: {down.stdout} {down.stderr}")


# -- against a silent scripted broker --------------------------------------------------------------------------------

def silent_run(scenario_path: str, run_dir: Path, kind: str) -> None:
    """The same load against a scripted name server and broker (tests/remoting/remoting_scripted_server.py) instead of
    a cluster: the broker acks every send at once until the fault's phase, then reads sends and never answers them
    (other requests, e.g. heartbeats, are still answered), as the read-only 4.9.1 master did. The broker side is thus
    the same for every run and every client."""
    sys.path.insert(0, str(REPO / "tests" / "remoting"))
    from remoting_scripted_server import (
        SILENT,
        ScriptedServer,
        broker_handler,
        namesrv_handler,
        route_for,
        send_ok_reply,
    )

    from harness.scenario import load_scenarios

    scenario = load_scenarios(scenario_path)[0]
    silent = threading.Event()
    broker = ScriptedServer(broker_handler(lambda cmd, n: SILENT if silent.is_set() else send_ok_reply(cmd, 0, n)))
    routes = {scenario.topic.name: route_for({"broker-a": broker.addr}, scenario.topic.queues)}
    namesrv = ScriptedServer(namesrv_handler(routes))
    meta: dict = {"kind": kind, "broker": "silent", "scenario": scenario.name, "load_average": os.getloadavg(),
                  "namesrv": namesrv.addr, "broker_addr": broker.addr}

    def fire(phase, _prepared) -> None:
        if phase.faults:
            silent.set()
        if python_load is not None:
            python_load.set_phase(phase.name)

    program, probe = kind.split("-")
    java_load: FloodProbeProcess | None = None
    python_load = None
    try:
        if program == "java":
            java_load = FloodProbeProcess(scenario, namesrv.addr, run_dir, probe)
        else:
            from loads import LoadProcess

            python_load = LoadProcess(load_spec(scenario, namesrv.addr, probe), run_dir, run_dir.name)
            python_load.start(phase=scenario.phases[0].name)
        meta["phases"] = timeline(scenario.phases, lambda _ph: None, fire)
        meta["load_stop_wall_ns"] = time.time_ns()
        if java_load is not None:
            meta["floodprobe_exit"] = java_load.stop()
        else:
            meta["load_stop"] = python_load.stop()
    finally:
        if java_load is not None:
            java_load.kill()
        if python_load is not None:
            python_load.kill()
        meta["broker_connections"] = broker.connections_accepted
        broker.close()
        namesrv.close()
        (run_dir / "run.json").write_text(json.dumps(meta, indent=1, default=str))


def load_spec(scenario, namesrv: str, probe: str) -> dict:
    """The scenario's load as a `loads.LoadSpec` (what the harness hands the load), the probe on the flood's client
    instance for `probe == "shared"`."""
    clients = []
    for c in scenario.load.clients:
        spec = {"name": c.name, "users": c.users, "model": c.model or scenario.load.model,
                "message_size": c.message_size, "send_timeout_ms": round(c.timeout * 1000), "profile": c.profile}
        if c.name == "probe":
            spec["instance"] = "flood" if probe == "shared" else "probe"
        clients.append(spec)
    return {"topic": scenario.topic.name, "namesrv": namesrv, "model": scenario.load.model, "clients": clients,
            "phases": [{"name": p.name} for p in scenario.phases]}


def arm_fault(fault, run_dir: Path) -> tuple:
    """`rmq-chaos fault apply` (with verify) started ahead of the phase, its imports done; it applies on the cue."""
    argv = ["fault", "apply", fault.kind, "--node", fault.target.replace("/", "-"), "--id", fault.id,
            "--events", str(run_dir / "events.jsonl")]
    if fault.params:
        argv += ["--params", json.dumps(fault.params)]
    lead = subprocess.Popen([sys.executable, "-c", FAULT_APPLY_LEAD, *argv], cwd=REPO, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "COLUMNS": "200"})
    if lead.stdout.readline().strip() != "armed":
        raise RuntimeError(f"fault {fault.id}: the apply command did not start")
    return fault, lead


def sleep_until(at: float) -> None:
    while (left := at - time.monotonic()) > 0:
        time.sleep(min(left, 0.05))


# -- a Python run ----------------------------------------------------------------------------------------------------

def client_version(home: str) -> str:
    """The rocketmq-client jar's version in `home`/lib (e.g. 4.9.1), or the directory's name."""
    jars = sorted(Path(home, "lib").glob("rocketmq-client-*.jar"))
    found = re.match(r"rocketmq-client-(.+)\.jar$", jars[0].name) if jars else None
    return found.group(1) if found else Path(home).name


def python_run(scenario_path: str, run_dir: Path, kind: str, variant: str | None = None) -> None:
    only = ["--only", variant] if variant else []
    proc = rmq_chaos("run", scenario_path, *only, "--program", "apache", "--no-report", "--out", str(run_dir),
                     check=False, timeout=900)
    (run_dir / "run.txt").write_text(proc.stdout + proc.stderr)
    made = [d for d in run_dir.iterdir() if (d / "events.jsonl").exists()]
    if not made:
        raise RuntimeError(f"rmq-chaos run: exit {proc.returncode}, no run directory\n{proc.stderr[-2000:]}")
    meta = {"kind": kind, "run_dir": str(made[0]), "run_id": made[0].name, "exit": proc.returncode,
            "load_average": os.getloadavg(), "variant": variant}
    (run_dir / "run.json").write_text(json.dumps(meta, indent=1))


# -- what is left after a run ----------------------------------------------------------------------------------------

def leftovers(state: Path) -> set[str]:
    """Mounts and loop devices under the state dir, and every rmq-chaos cgroup (other runs' too: compared before and
    after, and only those named by the run's id count)."""
    left = {f"mount {x.split()[1]}" for x in Path("/proc/mounts").read_text().splitlines() if str(state) in x}
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    left |= {f"loop {x}" for x in loops.splitlines() if str(state) in x}
    left |= {f"cgroup {d}" for d in Path("/sys/fs/cgroup").glob("*/rmq-chaos/*") if d.is_dir()}
    return left


def check_clean(state: Path, run_dir: Path, before: set[str]) -> None:
    """`rmq-chaos cleanup` on the run's state dir must find nothing to do, and no mount, loop device or cgroup made
    since the run started may be left."""
    proc = rmq_chaos("cleanup", "--state-dir", str(state), check=False)
    run_id = json.loads((run_dir / "run.json").read_text()).get("run_id") if (run_dir / "run.json").exists() else None
    left = sorted(x for x in leftovers(state) - before if not x.startswith("cgroup ") or (run_id and run_id in x))
    text = f"cleanup exit {proc.returncode}: {proc.stdout.strip()} {proc.stderr.strip()}\nleft: {left or 'nothing'}\n"
    (run_dir / "cleanup.txt").write_text(text)
    if proc.returncode != 0 or left or "nothing to clean up" not in proc.stdout:
        log(f"NOT CLEAN after {run_dir.name}: {text}")
    else:
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
