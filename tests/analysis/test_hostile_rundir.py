"""Hostile run directories for `rmq-chaos report`: every file it reads (scenario copy, events, cluster and read-back
JSON, Parquet parts) crafted to be expensive, damaged or of the wrong kind, and fuzzed with Hypothesis. Opening the
directory either accepts it (with warnings for what an interrupted run may leave) or refuses it with one
`RunDirError` line naming the file; through the CLI that is exit 254, one line, no traceback, nothing written. The
per-test timeout is the hang guard (no timed assertion)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from known_runs import clean_run

from analysis.errors import RunDirError
from analysis.job import EXIT_BAD_INPUT
from analysis.rundir import open_run_dir

REPO = Path(__file__).resolve().parents[2]
LAUGHS = "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9)) + "name: x\n"
DEEP_JSON = b"[" * 100_000 + b"]" * 100_000

# id: (file in the run directory, content; None makes a directory, "fifo" a named pipe; accepted?, a word)
CRAFTED: dict[str, tuple[str, bytes | str | None, bool, str]] = {
    "scenario-billion-laughs": ("scenario.yaml", LAUGHS.encode(), False, "alias"),
    "scenario-deep": ("scenario.yaml", b"name: x\nphases: " + b"[" * 5000 + b"]" * 5000, False, "nested"),
    "scenario-cycle": ("scenario.yaml", b"name: x\nphases: &a [*a]\n", False, "cycle"),
    "scenario-python-tag": ("scenario.yaml", b"name: !!python/object/apply:os.system [true]\n", False, "tag"),
    "scenario-nul": ("scenario.yaml", b"name: x\x00\n", False, "#x0000"),
    "scenario-latin-1": ("scenario.yaml", b"name: caf\xe9\n", False, "UTF-8"),
    "scenario-huge": ("scenario.yaml", b"name: " + b"a" * 400_000, False, "KiB"),
    "scenario-inf-duration": ("scenario.yaml", b"name: x\nphases: [{name: a, duration_s: .inf}]\n", False, "finite"),
    "scenario-inf-limit-text": ("scenario.yaml", b"name: x\nexpect: [{metric: share, outcome: SEND_OK, "
                                                 b"min: '1e400'}]\n", False, "finite"),
    "scenario-a-directory": ("scenario.yaml", None, False, "regular file"),
    "scenario-a-fifo": ("scenario.yaml", "fifo", False, "regular file"),
    "events-deep-json": ("events.jsonl", DEEP_JSON + b"\n", True, ""),
    "events-nan": ("events.jsonl", b'{"event": "run_start", "wall_ns": NaN}\n', True, ""),
    "events-huge-number": ("events.jsonl", b'{"event": "run_start", "wall_ns": 1e400}\n', True, ""),
    "events-4300-digits": ("events.jsonl", b'{"event": "run_start", "wall_ns": ' + b"9" * 5000 + b"}\n", True, ""),
    "events-wrong-types": ("events.jsonl", b'{"event": "phase_start", "wall_ns": 1, "phase": ["x"]}\n'
                                           b'{"event": "fault", "wall_ns": 2, "fault_id": {"a": 1}}\n'
                                           b'{"event": "readback_end", "wall_ns": true, "rows": "x"}\n', True, ""),
    "events-binary": ("events.jsonl", b"\x00\x01\xff\xfe\n\x1b[2J\n", True, ""),
    "events-a-directory": ("events.jsonl", None, False, "regular file"),
    "events-a-fifo": ("events.jsonl", "fifo", False, "regular file"),
    "cluster-deep": ("cluster.json", DEEP_JSON, True, ""),
    "cluster-latin-1": ("cluster.json", b'{"a": "\xff"}', True, ""),
    "cluster-a-fifo": ("cluster.json", "fifo", False, "regular file"),
    "queues-deep": ("readback/queues.json", DEEP_JSON, False, "nested"),
    "queues-latin-1": ("readback/queues.json", b'{"queues": "\xff"}', False, "UTF-8"),
    "queues-nan": ("readback/queues.json", b'{"queues": [NaN]}', False, "JSON"),
    "queues-a-fifo": ("readback/queues.json", "fifo", False, "regular file"),
    "part-garbage": ("requests/part-w1-9.parquet", b"PAR1" + b"\x00" * 100 + b"PAR1", True, ""),
    "part-a-directory": ("requests/part-w1-9.parquet", None, True, ""),
    "part-a-fifo": ("requests/part-w1-8.parquet", "fifo", True, ""),
}


@pytest.fixture(scope="module")
def base_run(tmp_path_factory) -> Path:
    path, _ = clean_run(tmp_path_factory.mktemp("base"))
    return path


def _plant(run: Path, name: str, content: bytes | str | None) -> Path:
    f = run / name
    if f.is_dir():
        shutil.rmtree(f)
    elif f.exists():
        f.unlink()
    f.parent.mkdir(exist_ok=True)
    if content is None:
        f.mkdir()
    elif content == "fifo":
        os.mkfifo(f)
    else:
        f.write_bytes(content)
    return f


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", list(CRAFTED))
def test_crafted_run_dir_file_is_accepted_or_refused_in_one_line(case: str, base_run: Path, tmp_path: Path) -> None:
    name, content, accepted, word = CRAFTED[case]
    run = tmp_path / "run"
    shutil.copytree(base_run, run)
    planted = _plant(run, name, content)
    if accepted:
        opened = open_run_dir(run)
        assert opened.warnings and all("\n" not in w for w in opened.warnings)
        return
    with pytest.raises(RunDirError) as err:
        open_run_dir(run)
    line = str(err.value)
    assert "\n" not in line and len(line) <= 1100, line[:300]
    assert str(planted) in line and word.lower() in line.lower(), line[:300]


@pytest.mark.timeout(240)
def test_report_cli_refuses_a_bomb_with_exit_254_and_writes_nothing(base_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(base_run, run)
    _plant(run, "scenario.yaml", LAUGHS.encode())
    env = {**os.environ, "PYTHONPATH": str(REPO), "RMQ_CHAOS_STATE": str(tmp_path / "state")}
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "report", str(run), "--no-progress"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=200, check=False)
    assert proc.returncode == EXIT_BAD_INPUT, proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert str(run / "scenario.yaml") in lines[0] and "alias" in lines[0]
    assert not (run / "report").exists()


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
              st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=10)
EVENT_KEYS = st.sampled_from(["event", "wall_ns", "phase", "fault_id", "kind", "action", "status", "duration_s",
                              "index", "rows", "nodes", "evidence", "run_id", "rate", "target", "error"])
EVENTS = st.lists(st.dictionaries(EVENT_KEYS, st.one_of(JSON_VALUES, st.sampled_from(
    ["run_start", "run_end", "phase_start", "phase_end", "fault", "readback_start", "readback_end", "apply",
     "verify", "revert", "ok", "started", "failed", "completed", "healthy"])), max_size=8), max_size=12)


@pytest.mark.timeout(300)
@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(events=EVENTS, scenario_junk=st.binary(max_size=48), cut=st.integers(min_value=0, max_value=400),
       cluster=JSON_VALUES, queues=JSON_VALUES)
def test_fuzzed_run_dir_files_open_or_fail_in_one_line(events, scenario_junk, cut, cluster, queues, base_run,
                                                       tmp_path_factory) -> None:
    run = tmp_path_factory.mktemp("fuzz") / "run"
    shutil.copytree(base_run, run)
    with open(run / "events.jsonl", "ab") as f:
        f.write(b"".join(json.dumps(e).encode() + b"\n" for e in events))
    text = (run / "scenario.yaml").read_bytes()
    (run / "scenario.yaml").write_bytes(text[:cut] + scenario_junk + text[cut:])
    (run / "cluster.json").write_text(json.dumps(cluster))
    (run / "readback" / "queues.json").write_text(json.dumps({"queues": queues}))
    try:
        opened = open_run_dir(run)
    except RunDirError as err:
        line = str(err)
        assert "\n" not in line and str(run) in line, line[:300]
        return
    assert opened.timeline is not None


@pytest.mark.timeout(300)
@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=1 << 20), flip=st.integers(min_value=0, max_value=1 << 20),
       junk=st.binary(max_size=32))
def test_fuzzed_parquet_parts_are_skipped_or_refused(cut, flip, junk, base_run, tmp_path_factory) -> None:
    """A part file cut short, with a byte flipped or junk spliced in (footer included): skipped with a reason,
    accepted when still readable, or refused in one line naming it; never a crash."""
    run = tmp_path_factory.mktemp("parts") / "run"
    shutil.copytree(base_run, run)
    part = sorted((run / "requests").glob("part-*.parquet"))[0]
    raw = bytearray(part.read_bytes())
    at = flip % len(raw)
    raw[at] ^= 0xFF
    cut %= len(raw) + 1
    part.write_bytes(bytes(raw[:cut]) + junk + bytes(raw[cut:]))
    try:
        opened = open_run_dir(run)
    except RunDirError as err:
        assert "\n" not in str(err) and part.name in str(err), str(err)[:300]
        return
    assert part in opened.parts["requests"] or any(part.name in s for s in opened.skipped["requests"])
