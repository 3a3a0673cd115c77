"""Hostile scenario files: crafted to be expensive to parse (alias bombs, deep nesting, cycles, giant values),
carrying control characters, foreign tags or absurd figures, and fuzzed with Hypothesis. Each gets exactly one line
on stderr naming the file, exit code 2, and nothing started. The per-test timeout is the hang guard (no timed
assertion)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from malformed_scenarios import BASE

from harness.cli import main
from harness.scenario import SourceError, load_scenario_text

REPO = Path(__file__).resolve().parents[2]
EXIT_INVALID = 2
ONE_PHASE = "phases: [{name: a, duration: 1s}]\n"
"""The phases of a small valid scenario, after the key a crafted file is about."""
LAUGHS = "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9))

CRAFTED: dict[str, tuple[str | bytes, str]] = {
    # id: (file content, a word the one line must carry)
    "billion-laughs": ("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + LAUGHS + BASE, "alias"),
    "merge-key-laughs": ("a: &a {x: 1}\nb: &b {<<: *a, y: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]}\n"
                         + "".join(f"c{i}: &c{i} [{', '.join([f'*c{i - 1}' if i else '*b'] * 10)}]\n"
                                   for i in range(7)) + BASE, "alias"),
    "deep-flow-lists": ("name: x\nphases: " + "[" * 20000 + "]" * 20000 + "\n", "nested deeper"),
    "deep-flow-maps": ("name: x\nphases: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n", "nested deeper"),
    "deep-block": ("name: x\nphases:\n" + "".join("  " * i + "- \n" for i in range(1, 200)), "nested deeper"),
    "anchor-to-itself": ("name: x\nphases: &p [*p]\n", "cycle"),
    "anchor-to-itself-map": ("name: x\nload: &m {clients: *m}\n" + ONE_PHASE, "cycle"),
    "python-object-tag": ("name: !!python/object/apply:os.system [true]\n", "tag"),
    "python-name-tag": ("name: x\nphases: !!python/name:os.system\n", "tag"),
    "binary-tag": ("name: !!binary aGVsbG8=\n" + ONE_PHASE, "tag"),
    "set-tag": ("name: x\nphases: !!set {a, b}\n", "tag"),
    "huge-int": ("name: x\ntopic: {queues: " + "9" * 5000 + "}\n" + ONE_PHASE, "number"),
    "huge-float": ("name: x\nload: {model: open, rate: 1.0e+999, clients: [{name: f}]}\n" + ONE_PHASE, "finite"),
    "nan-rate": ("name: x\nload: {model: open, rate: .nan, clients: [{name: f}]}\n" + ONE_PHASE, "finite"),
    "inf-text-limit": ("name: x\n" + ONE_PHASE
                       + "expect: [{phase: a, metric: share, outcome: SEND_OK, min: '1e400'}]\n", "finite"),
    "rate-1e300": ("name: x\nload: {model: open, rate: 1.0e+300, clients: [{name: f}]}\n" + ONE_PHASE, "at most"),
    "week-long-phase": ("name: x\nphases: [{name: a, duration: 99999999999h}]\n", "at most"),
    "400-digit-duration": ("name: x\nphases: [{name: a, duration: " + "9" * 400 + "s}]\n", "duration"),
    "petabyte-store": ("name: x\ncluster: {store_size: 4096TiB}\n" + ONE_PHASE, "at most"),
    "endless-think-time": ("name: x\nload: {clients: [{name: f, users: 1, think_time: 9999999h}]}\n" + ONE_PHASE,
                           "at most"),
    "matrix-of-a-million-runs": ("name: x\ncluster: {allow_keys: [" + ", ".join(f"k{i}" for i in range(10)) + "]}\n"
                                 + ONE_PHASE + "matrix:\n"
                                 + "".join(f"  cluster.broker.common.k{i}: [1, 2, 3, 4]\n" for i in range(10)),
                                 "runs"),
    "many-phases": ("name: x\nphases:\n" + "".join(f"  - {{name: p{i}, duration: 1ms}}\n" for i in range(300)),
                    "at most"),
    "giant-string": ("name: " + "a" * 300_000 + "\n" + ONE_PHASE, "KiB"),
    "giant-name": ("name: " + "a" * 60_000 + "\n" + ONE_PHASE, "name"),
    "nul-byte": ("name: x\x00y\n" + ONE_PHASE, "#x0000"),
    "bell-and-escape": ("name: x\x07\x1b[31m\n" + ONE_PHASE, "#x0007"),
    "c1-control": ("name: x\x85\x9b\n" + ONE_PHASE, "x009b"),
    "tab-indent": ("name: x\nphases:\n\t- {name: a, duration: 1s}\n", "\\t"),
    "latin-1-bytes": (b"name: caf\xe9\n" + ONE_PHASE.encode(), "UTF-8"),
    "utf-16-with-bom": (("name: x\n" + ONE_PHASE).encode("utf-16"), "UTF-8"),
    "bom-then-garbage": (b"\xef\xbb\xbf\xff\xfe", "UTF-8"),
    "duplicate-key": ("name: x\n" + ONE_PHASE + "name: y\n", "duplicate"),
    "timestamp": ("name: 2026-11-23\n" + ONE_PHASE, "quote"),
    "empty": ("", "empty"),
    "only-a-comment": ("# nothing\n", "empty"),
    "a-list": ("- a\n- b\n", "mapping"),
    "two-documents": ("name: x\n---\nname: y\n", "document"),
}
CONF_ESCAPES = {"newline": "\\n", "carriage-return": "\\r", "nul": "\\0", "escape": "\\e", "tab": "\\t",
                "line-separator": "\\u2028", "next-line": "\\N", "delete": "\\x7f"}
"""YAML double-quoted escapes that put a control character into a broker.conf / namesrv.conf key or value."""
for _name, _esc in CONF_ESCAPES.items():
    for _where, _conf in (("common", "cluster: {broker: {common: {msgTraceTopicName: \"T%sstorePathCommitLog=/x\"}}}"),
                          ("master", "cluster: {broker: {master: {\"brokerPermission%s\": 6}}}"),
                          ("slave", "cluster: {broker: {slave: {msgTraceTopicName: \"%sT\"}}}"),
                          ("namesrv", "cluster: {namesrv: {productEnvName: \"x%sy\"}}")):
        CRAFTED[f"conf-{_where}-{_name}"] = ("name: x\n" + _conf % _esc + "\n" + ONE_PHASE, "control character")


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / f"{name}.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", errors="surrogatepass")
    return path


def _assert_one_line(err: str, path: Path, word: str = "") -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err[:2000]
    assert lines[0].startswith(f"{path}:") or lines[0].startswith(f"{path} "), lines[0][:300]
    assert "Traceback" not in err
    assert len(lines[0]) <= 1100, lines[0][:300]
    assert word.lower() in lines[0].lower(), lines[0][:300]
    return lines[0]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("case", list(CRAFTED))
def test_crafted_scenario_is_refused_in_one_line(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    content, word = CRAFTED[case]
    state = tmp_path / "state"
    monkeypatch.setenv("RMQ_CHAOS_STATE", str(state))
    path = _write(tmp_path, case, content)
    code = main(["validate", str(path)])
    _assert_one_line(capsys.readouterr().err, path, word)
    assert code == EXIT_INVALID
    assert not state.exists()


@pytest.mark.timeout(30)
def test_a_fifo_or_a_directory_is_refused_without_blocking(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    assert main(["validate", str(fifo)]) == EXIT_INVALID
    _assert_one_line(capsys.readouterr().err, fifo, "regular file")
    folder = tmp_path / "dir.yaml"
    folder.mkdir()
    assert main(["validate", str(folder)]) == EXIT_INVALID
    _assert_one_line(capsys.readouterr().err, folder, "regular file")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("command", ["run", "cluster-up"])
def test_run_and_cluster_up_refuse_a_bomb_before_starting_anything(command: str, tmp_path: Path) -> None:
    """Through the real command line: exit 2, one line on stderr, no state dir, no run directory."""
    path = _write(tmp_path, "bomb", CRAFTED["billion-laughs"][0])
    state, out = tmp_path / "state", tmp_path / "runs"
    argv = (["run", str(path), "--out", str(out), "--no-report"] if command == "run"
            else ["cluster", "up", str(path), "--out", str(out)])
    env = {**os.environ, "RMQ_CHAOS_STATE": str(state), "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "harness.cli", *argv], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=100, check=False)
    assert proc.returncode == EXIT_INVALID, proc.stderr
    _assert_one_line(proc.stderr, path, "alias")
    assert not state.exists() and not out.exists()


HOSTILE_SCALARS = st.one_of(
    st.integers(min_value=-(10**60), max_value=10**60),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
    st.sampled_from(["1e400", "-1e400", "nan", ".inf", "9" * 45, "99999999999h", "4096TiB", "0s", "1ms", "-1s",
                     "1.5B", "", " ", "\t", "~", "null", "yes", "no", "0x1F", "0o17", "1_000", "2026-01-01",
                     "a" * 5000]),
    st.none(), st.booleans(),
)
HOSTILE_VALUES = st.recursive(HOSTILE_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=12)


def _paths(data, prefix=()):
    yield prefix
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _paths(v, prefix + (i,))


BASE_DATA = yaml.safe_load(BASE)
BASE_PATHS = [p for p in _paths(BASE_DATA) if p]


def _set(data, path, value):
    for p in path[:-1]:
        data = data[p]
    data[path[-1]] = value


@pytest.mark.timeout(300)
@settings(max_examples=80, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(BASE_PATHS), value=HOSTILE_VALUES, style=st.sampled_from([None, True, False]))
def test_fuzzed_values_are_accepted_or_refused_in_one_line(path, value, style) -> None:
    """Any value at any key of a valid scenario: it loads, or fails with one `SourceError` line naming the file."""
    data = yaml.safe_load(BASE)
    _set(data, path, value)
    try:
        text = yaml.safe_dump(data, default_flow_style=style, allow_unicode=True)
    except yaml.YAMLError:
        return
    try:
        load_scenario_text("fuzz.yaml", text)
    except SourceError as err:
        line = err.one_line()
        assert "\n" not in line and line.startswith("fuzz.yaml") and len(line) <= 1100, line[:300]


@pytest.mark.timeout(300)
@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(cut=st.integers(min_value=0, max_value=len(BASE)), junk=st.binary(max_size=64))
def test_fuzzed_bytes_are_accepted_or_refused_in_one_line(cut: int, junk: bytes, tmp_path_factory) -> None:
    """Raw bytes spliced into a valid scenario file (control characters, broken UTF-8, stray YAML syntax)."""
    path = tmp_path_factory.mktemp("fuzz") / "fuzz.yaml"
    raw = BASE.encode()
    path.write_bytes(raw[:cut] + junk + raw[cut:])
    try:
        from harness.scenario import load_scenarios
        load_scenarios(path)
    except SourceError as err:
        line = err.one_line()
        assert "\n" not in line and line.startswith(str(path)), line[:300]
