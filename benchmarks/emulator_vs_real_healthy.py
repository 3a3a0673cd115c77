"""SEND_OK/s of the seed scenario's healthy phase on the emulator and on a real Apache RocketMQ, same machine, in
turns (emulator, apache, emulator, apache, ...), and the ratio emulator / real. Figures only, no assertion. Needs
root and an Apache RocketMQ binary distribution (`--rocketmq-home`, `{version}` standing for the scenario's version).

    sudo .venv/bin/python benchmarks/emulator_vs_real_healthy.py --rocketmq-home /opt/rocketmq-4.9.1 [--rounds 2]
        [--scenario scenarios/slave-readonly-default.yaml] [--phase healthy] [--out /var/tmp/emu-vs-real]
    sudo .venv/bin/python benchmarks/emulator_vs_real_healthy.py --programs emulator     # the emulator alone

The scenario is cut after the phase (its faults, later phases and other phases' expectations dropped) and run with
`rmq-chaos run --no-report --program P`; the rate is the phase's SEND_OK rows (all clients: flood and probe) over
the phase's length from events.jsonl. The load (Python, Locust) shares the 2 cores with the brokers either way.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as ds
import yaml

REPO = Path(__file__).resolve().parent.parent


def cut_scenario(src: Path, phase: str, dst: Path) -> Path:
    """The scenario up to and including `phase`, without faults or expectations of other phases."""
    doc = yaml.safe_load(src.read_text())
    phases = []
    for p in doc["phases"]:
        phases.append({k: v for k, v in p.items() if k != "faults"})
        if p["name"] == phase:
            break
    else:
        raise SystemExit(f"{src}: no phase {phase!r}")
    doc["name"] = f"{doc['name']}-{phase}-only"
    doc["phases"] = phases
    doc["expect"] = [e for e in doc.get("expect", []) if e.get("phase") == phase and "metric" in e
                     and e["metric"] in ("share", "count")]
    dst.write_text(yaml.safe_dump(doc, sort_keys=False))
    return dst


def phase_rate(run_dir: Path, phase: str) -> tuple[float, int, float]:
    """(SEND_OK/s, SEND_OK count, seconds) of `phase` in a run directory."""
    start = end = None
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        ev = json.loads(line)
        if ev.get("phase") == phase and ev["event"] == "phase_start":
            start = ev["mono_ns"]
        if ev.get("phase") == phase and ev["event"] == "phase_end":
            end = ev["mono_ns"]
    if start is None or end is None:
        raise SystemExit(f"{run_dir}: phase {phase!r} has no start/end event")
    table = ds.dataset(run_dir / "requests", format="parquet").to_table(columns=["phase", "outcome"])
    mask = pc.and_(pc.equal(table["phase"], phase), pc.equal(table["outcome"], "SEND_OK"))
    ok = pc.sum(mask.cast("int64")).as_py() or 0
    seconds = (end - start) / 1e9
    return ok / seconds, ok, seconds


def run_once(scenario: Path, program: str, out: Path, env: dict[str, str]) -> Path:
    target = out / program
    target.mkdir(parents=True, exist_ok=True)
    before = set(target.iterdir())
    with open(out / f"{program}.log", "ab") as log:
        code = subprocess.call([sys.executable, "-m", "harness.cli", "run", str(scenario), "--program", program,
                                "--no-report", "--out", str(target)], cwd=REPO, env=env, stdout=log, stderr=log)
    new = sorted(set(target.iterdir()) - before)
    if code != 0 or not new:
        raise SystemExit(f"{program}: rmq-chaos run exited {code} (see {out / f'{program}.log'})")
    return new[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", type=Path, default=REPO / "scenarios" / "slave-readonly-default.yaml")
    parser.add_argument("--phase", default="healthy")
    parser.add_argument("--rocketmq-home", default=os.environ.get("ROCKETMQ_HOME", ""))
    parser.add_argument("--programs", default="emulator,apache", help="comma-separated, run in this order")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("/var/tmp/emu-vs-real"))
    args = parser.parse_args()
    programs = args.programs.split(",")
    if "apache" in programs and not args.rocketmq_home:
        parser.error("--rocketmq-home (or $ROCKETMQ_HOME) is needed for the apache program")
    args.out.mkdir(parents=True, exist_ok=True)
    scenario = cut_scenario(args.scenario, args.phase, args.out / f"{args.scenario.stem}-{args.phase}.yaml")
    env = dict(os.environ, ROCKETMQ_HOME=args.rocketmq_home, SPARK_LOCAL_IP="127.0.0.1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    rates: dict[str, list[float]] = {p: [] for p in programs}
    for r in range(args.rounds):
        for program in programs:
            load = os.getloadavg()[0]
            t = time.monotonic()
            run_dir = run_once(scenario, program, args.out, env)
            rate, ok, seconds = phase_rate(run_dir, args.phase)
            rates[program].append(rate)
            print(f"round {r + 1} {program:8s} {args.phase}: SEND_OK {ok} in {seconds:.1f} s = {rate:,.0f}/s "
                  f"(load avg {load:.2f} at start, run {time.monotonic() - t:.0f} s, {run_dir})", flush=True)
    for program in programs:
        print(f"{program:8s} SEND_OK/s per round: {', '.join(f'{x:,.0f}' for x in rates[program])}; "
              f"median {statistics.median(rates[program]):,.0f}")
    if "emulator" in rates and "apache" in rates:
        emu, real = statistics.median(rates["emulator"]), statistics.median(rates["apache"])
        print(f"ratio emulator / real: {emu / real:.2f} (medians {emu:,.0f} / {real:,.0f} SEND_OK/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
