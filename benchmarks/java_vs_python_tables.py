"""The tables of `java_vs_python_outcomes.py`: a result directory's rows (a Java run's `sends.csv`, a Python run's
request parts) per phase and client, counted per outcome class, one column per run; the flood's failures in the
fault's phase as waves; and, where the rows name several broker groups, per phase and group the share of the sends
that ended on each group and of each outcome class there (`group_report`). A row belongs to the phase of its
intended time (its start in a closed model)."""
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
    """(kind, phase windows [(name, start_ns, end_ns)], rows {client, intended_ns, start_ns, end_ns, outcome, code,
    remark, broker, attempts}); broker: the group the send ended on ("" unknown), attempts: None unknown."""
    meta = json.loads((run_dir / "run.json").read_text())
    if "phases" in meta:
        windows = [(p["name"], p["start_wall_ns"], p["start_wall_ns"] + p["duration_s"] * 1e9) for p in meta["phases"]]
    if meta["kind"].startswith("python"):
        import pyarrow.parquet as pq

        rd = Path(meta.get("run_dir", run_dir))
        if "phases" not in meta:  # a harness run: its own phase events
            windows = [(e["phase"], e["wall_ns"], e["wall_ns"] + e["duration_s"] * 1e9)
                       for e in read_jsonl(rd / "events.jsonl") if e["event"] == "phase_start"]
        cols = ["client", "intended_ns", "start_ns", "end_ns", "outcome", "response_code", "remark", "broker",
                "attempts"]
        table = pq.read_table(sorted((rd / "requests").glob("*.parquet")), columns=cols).to_pylist()
        rows = [{"client": t["client"], "intended_ns": t["intended_ns"] or t["start_ns"], "start_ns": t["start_ns"],
                 "end_ns": t["end_ns"], "outcome": t["outcome"], "code": t["response_code"],
                 "remark": t["remark"] or "", "broker": t["broker"] or "", "attempts": t["attempts"]} for t in table]
        return meta["kind"], windows, rows
    rows = []
    with open(run_dir / "sends.csv", newline="") as f:
        for t in csv.DictReader(f):
            sent = t.get("brokers_sent")  # absent in rows of older FloodProbe versions
            rows.append({"client": t["client"], "intended_ns": int(t.get("intended_ns") or t["start_ns"]),
                         "start_ns": int(t["start_ns"]), "end_ns": int(t["end_ns"]), "outcome": t["outcome"],
                         "code": int(t["response_code"]) if t["response_code"] else None, "remark": t["remark"],
                         "broker": t.get("broker") or "",
                         "attempts": len(sent.split("|")) if sent else None})
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
    start = row.get("intended_ns") or row["start_ns"]
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
    fault_phase = find_fault_phase(runs)
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


def find_fault_phase(runs) -> str:
    """The first phase with faults, as a Java run's record has it (default "readonly")."""
    fault_phase = "readonly"
    for _, d, kind, _, _ in runs:
        meta = json.loads((d / "run.json").read_text())
        if not kind.startswith("python") and meta.get("faults"):
            with_faults = [p["name"] for p in meta["phases"] if p.get("faults")]
            fault_phase = with_faults[0] if with_faults else next(
                (p["name"] for p in meta["phases"] if p["name"] not in ("warmup", "healthy")), fault_phase)
            break
    return fault_phase


def run_label(run_dir: Path, kind: str) -> str:
    """`J4.9.1 off`, `J5.3.0 on`, `P off`: who sent (the Java client's version) and the matrix variant's value."""
    meta = json.loads((run_dir / "run.json").read_text())
    who = SHORT[kind] + ((meta.get("client_version") or "4.9.1") if kind.startswith("java") else "")
    variant = meta.get("variant")
    return who + (" " + variant.split("=")[-1] if variant else "")


ALL_GROUPS = "all"
GAP_PP = 5.0


def group_report(dirs: list[Path], split_s: float) -> str:
    """Markdown, where the runs' rows name more than one broker group ("" otherwise): per phase (warm-up excluded,
    the fault's phase also split at `split_s`) and group, the share (%) of the phase's sends that ended on the group,
    that were retried (more than one attempt), and of each outcome class (on the group, and over all groups), with
    the count; one column per run. `most J-P`: the largest difference in percentage points between a Java run and a
    Python run of the same variant, bold above 5."""
    runs, seen = [], Counter()
    for d in dirs:
        kind, windows, rows = load_rows(d)
        name = run_label(d, kind)
        seen[name] += 1
        runs.append((name, d, kind, windows, rows))
    groups = sorted({r["broker"] for run in runs for r in run[4] if r["broker"]})
    if len(groups) < 2:
        return ""
    twice = {n for n, c in seen.items() if c > 1}
    numbered, names = Counter(), []
    for i, (name, *rest) in enumerate(runs):
        if name in twice:
            numbered[name] += 1
            name = f"{name} #{numbered[name]}"
        names.append(name)
        runs[i] = (name, *rest)
    fault_phase = find_fault_phase(runs)
    totals: dict[str, Counter] = defaultdict(Counter)  # phase -> run -> sends
    cells: dict[tuple[str, str, str], Counter] = defaultdict(Counter)  # (phase, group, what) -> run -> count
    order: list[str] = []
    for name, _d, _kind, windows, rows in runs:
        for w in windows:
            for p in ([w[0]] if w[0] != fault_phase else [w[0], f"{w[0]} <{split_s:g}s", f"{w[0]} >={split_s:g}s"]):
                if p not in order and p != "warmup":
                    order.append(p)
        for row in rows:
            group = row["broker"] or "(none)"
            cls = outcome_class(row)
            for phase in label(row, windows, split_s, fault_phase):
                if phase == "warmup":
                    continue
                totals[phase][name] += 1
                cells[(phase, group, "sends")][name] += 1
                cells[(phase, group, cls)][name] += 1
                cells[(phase, ALL_GROUPS, cls)][name] += 1
                if (row["attempts"] or 0) > 1:
                    cells[(phase, group, "retried")][name] += 1
    variant = {n: n.split(" ")[1] if " " in n else "" for n in names}
    java = [n for n in names if n.startswith("J")]
    python = [n for n in names if n.startswith("P")]
    out = ["Share of the phase's sends, % (count). sends: ended on the group; retried: more than one attempt; "
           "an outcome class: ended so (on the group, or on any: `all`). most J-P: the largest difference, in "
           "percentage points, between a Java and a Python run of the same variant (bold: above 5).", "",
           "| phase | group | what | " + " | ".join(names) + " | most J-P |",
           "|" + "---|" * 3 + "---:|" * (len(names) + 1)]
    for phase in order:
        whole = totals.get(phase)
        if not whole:
            continue
        out.append(f"| {phase} | | all sends | " + " | ".join(str(whole.get(n, 0)) for n in names) + " | |")
        for group in [*groups, "(none)", ALL_GROUPS]:
            keys = [k for k in cells if k[0] == phase and k[1] == group]
            if not keys:
                continue
            classes = sorted({k[2] for k in keys} - {"sends", "retried"},
                             key=lambda c: -sum(cells[(phase, group, c)].values()))
            whats = ([] if group == ALL_GROUPS else ["sends", "retried"]) + classes
            for what in whats:
                per = cells.get((phase, group, what), Counter())
                if not per and what != "retried":
                    continue
                share = {n: 100.0 * per.get(n, 0) / whole[n] if whole.get(n) else float("nan") for n in names}
                gaps = [abs(share[j] - share[p]) for j in java for p in python
                        if variant[j] == variant[p] and whole.get(j) and whole.get(p)]
                gap = f"{max(gaps):.1f}" if gaps else ""
                if gaps and max(gaps) > GAP_PP:
                    gap = f"**{gap}**"
                out.append(f"| {phase} | {group} | {what} | "
                           + " | ".join(f"{share[n]:.1f} ({per.get(n, 0)})" for n in names) + f" | {gap} |")
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
