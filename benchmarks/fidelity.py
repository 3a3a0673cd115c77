"""The emulator beside a real Apache RocketMQ: every ready scenario run on both programs in turns (emulator, apache,
emulator, apache, ...), then per scenario and phase the outcome counts and latency percentiles of each program side
by side, as the markdown tables of docs/fidelity.md. Figures only, no assertion. Needs root and an Apache RocketMQ
binary distribution (`--rocketmq-home`, `{version}` standing for the scenario's version).

    sudo .venv/bin/python benchmarks/fidelity.py --rocketmq-home /opt/rocketmq-{version} [--rounds 1]
        [--out /var/tmp/fidelity] [scenarios/slave-readonly-default.yaml ...]
    .venv/bin/python benchmarks/fidelity.py --tables RUNS_DIR      # tables of run directories made before

Run directories go to `OUT/<program>/`; a table row is an outcome word (MQClientException with its response code,
MQBrokerException with its remark's bracketed prefix), its count per program (several rounds: each round's count,
joined by /), and the latency p50 / p99 (ms, from the intended start) of the rows of the first round."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parent.parent
PROGRAMS = ("emulator", "apache")
DEFAULT_SCENARIOS = sorted(str(p.relative_to(REPO)) for p in (REPO / "scenarios").glob("*.yaml"))


def run_all(scenarios: list[str], rounds: int, out: Path, home: str) -> None:
    env = dict(os.environ, ROCKETMQ_HOME=home, SPARK_LOCAL_IP="127.0.0.1")
    for r in range(rounds):
        for scenario in scenarios:
            for program in PROGRAMS:
                target = out / program
                target.mkdir(parents=True, exist_ok=True)
                print(f"round {r + 1}: {scenario} on {program}", file=sys.stderr, flush=True)
                code = subprocess.call([sys.executable, "-m", "harness.cli", "run", scenario, "--program", program,
                                        "--out", str(target)], cwd=REPO, env=env)
                print(f"  exit {code}", file=sys.stderr, flush=True)


def outcome_label(outcome: str, code: int | None, remark: str | None) -> str:
    if outcome == "MQClientException":
        return f"MQClientException {code}"
    if outcome == "MQBrokerException":
        prefix = (remark or "").split("]")[0] + "]" if (remark or "").startswith("[") else str(code)
        return f"MQBrokerException {code} {prefix}"
    return outcome


def run_summary(run_dir: Path) -> dict:
    """{"name", "program", "valid", "held", "order" (phases as run), "phases": {phase: {label: n}},
    "latency": {phase: (p50, p99)}}."""
    cluster = json.loads((run_dir / "cluster.json").read_text())
    verdict_file = run_dir / "report" / "verdict.json"
    verdict = json.loads(verdict_file.read_text()) if verdict_file.exists() else {}
    runs = verdict.get("runs") or [verdict]
    exps = [e for r in runs for e in (r.get("expectations") or [])]
    held = f"{sum(1 for e in exps if e.get('held') is True)}/{len(exps)}" if exps else "-"
    name = run_dir.name.split("-", 1)[1] if "-" in run_dir.name else run_dir.name
    parts = str(run_dir / "requests" / "*.parquet")
    rows = duckdb.sql(f"select phase, outcome, response_code, remark, count(*) n from read_parquet('{parts}') "
                      "group by all").fetchall()
    phases: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for phase, outcome, code, remark, n in rows:
        phases[phase][outcome_label(outcome, code, remark)] += n
    lat = duckdb.sql(f"select phase, quantile_cont(latency_ms, 0.5), quantile_cont(latency_ms, 0.99) "
                     f"from read_parquet('{parts}') group by phase").fetchall()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines() if line.strip()]
    order = [e["phase"] for e in events if e.get("event") == "phase_start"]
    return {"name": name, "program": cluster.get("program"), "valid": verdict.get("valid"), "held": held, "order": order,
            "phases": phases, "latency": {p: (a, b) for p, a, b in lat}}


def tables(runs_dir: Path) -> str:
    summaries: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for run_dir in sorted(runs_dir.glob("*/*/")):
        if (run_dir / "cluster.json").exists() and (run_dir / "requests").is_dir():
            s = run_summary(run_dir)
            summaries[s["name"]][s["program"]].append(s)
    out = []
    for name, by_program in sorted(summaries.items()):
        emu, real = by_program.get("emulator", []), by_program.get("apache", [])
        out.append(f"### {name}\n")
        out.append("| | emulator | Apache RocketMQ |\n|---|---|---|")
        out.append(f"| verdict (held) | {' / '.join(str(s['valid']) + ' ' + s['held'] for s in emu)} | "
                   f"{' / '.join(str(s['valid']) + ' ' + s['held'] for s in real)} |\n")
        for phase in _phase_order(emu + real):
            out.append(f"**{phase}**\n")
            out.append("| outcome | emulator | real | ")
            out.append("|---|---:|---:|")
            labels = sorted({k for s in emu + real for k in s["phases"].get(phase, {})},
                            key=lambda k: -max([s["phases"].get(phase, {}).get(k, 0) for s in emu + real]))
            for label in labels:
                e = "/".join(str(s["phases"].get(phase, {}).get(label, 0)) for s in emu) or "-"
                r = "/".join(str(s["phases"].get(phase, {}).get(label, 0)) for s in real) or "-"
                out.append(f"| {label} | {e} | {r} |")
            e_lat = emu[0]["latency"].get(phase) if emu else None
            r_lat = real[0]["latency"].get(phase) if real else None
            out.append(f"| latency p50 / p99 ms | {_lat(e_lat)} | {_lat(r_lat)} |\n")
    return "\n".join(out)


def _phase_order(summaries: list[dict]) -> list[str]:
    seen: list[str] = []
    for s in summaries:
        seen += [p for p in s["order"] if p not in seen]
    return seen


def _lat(v: tuple[float, float] | None) -> str:
    return "-" if v is None else f"{v[0]:.1f} / {v[1]:.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenarios", nargs="*", default=DEFAULT_SCENARIOS)
    ap.add_argument("--rocketmq-home", default=os.environ.get("ROCKETMQ_HOME"))
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("/var/tmp/rmq-chaos-fidelity"))
    ap.add_argument("--tables", type=Path, metavar="RUNS_DIR", help="only print the tables of RUNS_DIR")
    args = ap.parse_args()
    if args.tables:
        print(tables(args.tables))
        return 0
    if not args.rocketmq_home:
        ap.error("--rocketmq-home (or $ROCKETMQ_HOME) names the Apache RocketMQ distribution")
    run_all(args.scenarios, args.rounds, args.out, args.rocketmq_home)
    print(tables(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
