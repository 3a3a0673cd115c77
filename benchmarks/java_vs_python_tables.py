"""The tables of `java_vs_python_outcomes.py`: a result directory's rows (a Java run's `sends.csv`, a Python run's
request parts) per phase and client, counted per outcome class, one column per run; and the flood's failures in the
fault's phase as waves."""
from __future__ import annotations

import csv
import json
import re
import statistics
from collections import Counter, defaultdict
from pathlib import Path


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def load_rows(run_dir: Path) -> tuple[str, list[tuple[str, float, float]], list[dict]]:
    """(kind, phase windows [(name, start_ns, end_ns)], rows {client, start_ns, end_ns, outcome, code, remark})."""
    meta = json.loads((run_dir / "run.json").read_text())
    if "phases" in meta:
        windows = [(p["name"], p["start_wall_ns"], p["start_wall_ns"] + p["duration_s"] * 1e9) for p in meta["phases"]]
    if meta["kind"].startswith("python"):
        import pyarrow.parquet as pq

        rd = Path(meta.get("run_dir", run_dir))
        if "phases" not in meta:  # a harness run: its own phase events
            windows = [(e["phase"], e["wall_ns"], e["wall_ns"] + e["duration_s"] * 1e9)
                       for e in read_jsonl(rd / "events.jsonl") if e["event"] == "phase_start"]
        cols = ["client", "start_ns", "end_ns", "outcome", "response_code", "remark"]
        table = pq.read_table(sorted((rd / "requests").glob("*.parquet")), columns=cols).to_pylist()
        rows = [{"client": t["client"], "start_ns": t["start_ns"], "end_ns": t["end_ns"], "outcome": t["outcome"],
                 "code": t["response_code"], "remark": t["remark"] or ""} for t in table]
        return meta["kind"], windows, rows
    rows = []
    with open(run_dir / "sends.csv", newline="") as f:
        for t in csv.DictReader(f):
            rows.append({"client": t["client"], "start_ns": int(t["start_ns"]), "end_ns": int(t["end_ns"]),
                         "outcome": t["outcome"], "code": int(t["response_code"]) if t["response_code"] else None,
                         "remark": t["remark"]})
    return meta["kind"], windows, rows


def outcome_class(row: dict) -> str:
    if row["outcome"] in ("MQClientException", "MQBrokerException"):
        return f"{row['outcome']} {row['code']}"
    return row["outcome"]


CAUSE = re.compile(r"\(cause: (\w+): (.*)\)$")


def cause_class(row: dict) -> str:
    """The outcome class with what ended the last attempt: `MQClientException 10002 <- RemotingTimeoutException:
    invokeSync call timeout`."""
    base = outcome_class(row)
    m = CAUSE.search(row["remark"] or "")
    if row["outcome"] != "MQClientException" or not m:
        return base
    text = re.sub(r"<[^>]*>", "<addr>", m.group(2))
    text = re.sub(r"\d+", "N", text)
    return f"{base} <- {m.group(1)}: {text}"


def label(row: dict, windows, split_s: float, fault_phase: str | None) -> list[str]:
    start = row["start_ns"]
    for name, lo, hi in windows:
        if lo <= start < hi:
            if name == fault_phase:
                part = "<" if start - lo < split_s * 1e9 else ">="
                return [name, f"{name} {part}{split_s:g}s"]
            return [name]
    return []


SHORT = {"java-own": "J", "java-shared": "Js", "python-own": "P", "python": "P", "python-shared": "Ps"}


def report(dirs: list[Path], split_s: float, detail: bool, compact: bool = False) -> str:
    """Markdown: per phase and client, the count of each outcome class in each run (columns J1, P1, Js1, Ps1, ... by
    kind and order); `compact` puts every phase and client in one table."""
    runs, seen = [], Counter()
    for d in dirs:
        kind, windows, rows = load_rows(d)
        seen[SHORT[kind]] += 1
        runs.append((f"{SHORT[kind]}{seen[SHORT[kind]]}", d, kind, windows, rows))
    if not runs:
        return "(no runs)"
    fault_phase = "readonly"
    for _, d, kind, _, _ in runs:
        meta = json.loads((d / "run.json").read_text())
        if not kind.startswith("python") and meta.get("faults"):
            with_faults = [p["name"] for p in meta["phases"] if p.get("faults")]
            fault_phase = with_faults[0] if with_faults else next(
                (p["name"] for p in meta["phases"] if p["name"] not in ("warmup", "healthy")), fault_phase)
            break
    counts: dict[tuple[str, str], dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    times: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for name, _d, _kind, windows, rows in runs:
        for row in rows:
            for phase in label(row, windows, split_s, fault_phase):
                if phase == "warmup":
                    continue
                cls = cause_class(row) if detail else outcome_class(row)
                counts[(phase, row["client"])][cls][name] += 1
                times[(phase, row["client"])][cls].append((row["end_ns"] - row["start_ns"]) / 1e6)
    names = [r[0] for r in runs]
    out = ["runs: " + ", ".join(f"{n} = {d} ({k}, load average {load_of(d):.1f})" for n, d, k, _, _ in runs), ""]
    order = []
    for _, _, _, windows, _ in runs:
        for w in windows:
            for p in ([w[0]] if w[0] != fault_phase else [w[0], f"{w[0]} <{split_s:g}s", f"{w[0]} >={split_s:g}s"]):
                if p not in order and p != "warmup":
                    order.append(p)
    extra_head = " median ms |" if detail else ""
    if compact:
        out.append("| phase | client | outcome | " + " | ".join(names) + " |" + extra_head)
        out.append("|" + "---|" * (len(names) + 3 + (1 if detail else 0)))
    for phase in order:
        for client in ("flood", "probe"):
            table = counts.get((phase, client))
            if not table:
                continue
            if not compact:
                out += [f"### {phase}, {client}", "", "| outcome | " + " | ".join(names) + " |" + extra_head,
                        "|" + "---|" * (len(names) + 1 + (1 if detail else 0))]
            for cls, per in sorted(table.items(), key=lambda kv: -sum(kv[1].values())):
                cells = [str(per.get(n, 0)) for n in names]
                if detail:
                    cells.append(f"{statistics.median(times[(phase, client)][cls]):.0f}")
                lead = f"| {phase} | {client} | {cls} | " if compact else f"| {cls} | "
                out.append(lead + " | ".join(cells) + " |")
            if not compact:
                out.append("")
    return "\n".join(out)


LETTER = {"RemotingTooMuchRequestException": "T", "MQClientException -1": "S", "MQClientException 10002": "W",
          "MQClientException 10001": "C"}
WAVE_GAP_NS = 1e9


def waves(dirs: list[Path]) -> str:
    """The flood's failed sends of the fault's phase in start order, cut where 1 s passes without a start: per wave
    when it started (s into the phase), how far apart its sends started (ms), and each send's outcome: T
    RemotingTooMuchRequestException, S MQClientException -1 (last attempt failed by a closed channel), W 10002 (last
    attempt timed out), C 10001 (no connection), ? anything else."""
    out = ["T RemotingTooMuchRequestException, S MQClientException -1, W MQClientException 10002, "
           "C MQClientException 10001", ""]
    for d in dirs:
        kind, windows, rows = load_rows(d)
        fault = [w for w in windows if w[0] not in ("warmup", "healthy")]
        if not fault:
            continue
        _, lo, hi = fault[0]
        failed = sorted((r for r in rows if r["client"] == "flood" and lo <= r["start_ns"] < hi
                         and outcome_class(r) in LETTER), key=lambda r: r["start_ns"])
        out.append(f"{d} ({kind})")
        group: list[dict] = []
        for r in failed + [None]:
            if group and (r is None or r["start_ns"] - group[-1]["start_ns"] > WAVE_GAP_NS):
                first = group[0]["start_ns"]
                out.append(f"  {(first - lo) / 1e9:6.2f} s  {(group[-1]['start_ns'] - first) / 1e6:6.1f} ms  "
                           + "".join(LETTER[outcome_class(x)] for x in group))
                group = []
            if r is not None:
                group.append(r)
        out.append("")
    return "\n".join(out)


def load_of(run_dir: Path) -> float:
    value = json.loads((run_dir / "run.json").read_text()).get("load_average")
    return value[0] if isinstance(value, list) else float("nan")
