"""Malformed scenarios: each gives exactly one line on stderr naming the file, the line and the key (and the allowed
values where there is a list of them), and a non-zero exit code; valid files and matrices resolve as documented."""
from __future__ import annotations

from pathlib import Path

import psutil
import pytest
import yaml
from malformed_scenarios import BASE, CASES, Case

from harness.cli import main
from harness.scenario import Scenario, load_scenarios


def _load_text(tmp_path: Path, text: str) -> list[Scenario]:
    """The runs of a scenario file holding `text`."""
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return load_scenarios(path)


def _made_by(tmp_path: Path) -> tuple[list[str], set[int], list[str]]:
    """Mounts under the test's directory, child processes of the test, cgroups of a run of the base scenario."""
    mounts = [line for line in Path("/proc/mounts").read_text().splitlines() if str(tmp_path) in line]
    cgroups = [str(p) for p in Path("/sys/fs/cgroup").glob("*/rmq-chaos/*-base*")]
    return mounts, {c.pid for c in psutil.Process().children(recursive=True)}, cgroups


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_malformed_scenario_gives_one_line_and_starts_nothing(
        case: Case, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv("RMQ_CHAOS_STATE", str(state))
    path = tmp_path / f"{case.id}.yaml"
    path.write_text(case.text(), encoding="utf-8")
    before = _made_by(tmp_path)
    argv = [command, str(path)] + (["--out", str(tmp_path / "runs")] if command == "run" else [])
    code = main(argv)
    err = capsys.readouterr().err
    assert code != 0
    lines = err.splitlines()
    assert len(lines) == 1, err
    where = f"{path}:{case.line}:" if case.line else f"{path}:"
    assert lines[0].startswith(where), lines[0]
    assert case.key in lines[0], lines[0]
    assert case.says in lines[0], lines[0]
    assert not state.exists(), "a journal or state dir was made"
    assert not (tmp_path / "runs").exists(), "a run directory was made"
    mounts, children, cgroups = _made_by(tmp_path)
    assert not mounts
    assert children <= before[1]
    assert not cgroups


def test_cli_exit_code_and_stderr_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "bad.yaml"
    path.write_text(CASES[0].text(), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "run", str(path), "--out", str(tmp_path / "runs")],
                          capture_output=True, text=True, check=False, timeout=60,
                          env={"RMQ_CHAOS_STATE": str(tmp_path / "s"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"{path}:2: nmae: unknown key 'nmae'; allowed: name, description, variant, "
                                        "cluster, topic, load, warmup, phases, readback, consumers, expect"]
    assert not (tmp_path / "runs").exists() and not (tmp_path / "s").exists()


def test_there_are_at_least_twenty_cases() -> None:
    assert len({c.id for c in CASES}) >= 20


def test_base_is_valid_and_resolves(tmp_path: Path) -> None:
    (s,) = _load_text(tmp_path, BASE)
    data = s.resolved()
    assert [p["name"] for p in data["phases"]] == ["warmup", "healthy", "outage"]
    assert [p["duration_s"] for p in data["phases"]] == [5.0, 5.0, 5.0]
    assert data["warmup"] == "0s"
    assert data["cluster"]["store_size"] == "64MiB"
    assert data["load"]["clients"][0]["profile"] == "java-4.9.1"
    assert data["phases"][2]["faults"][0] == {"id": "ro", "kind": "readonly_fs", "target": "slave", "params": {},
                                              "revert": "phase_end"}
    (s2,) = _load_text(tmp_path, yaml.safe_dump(data, sort_keys=False))
    assert s2.resolved() == data


def test_phase_expectations_join_the_list_with_their_phase(tmp_path: Path) -> None:
    (s,) = _load_text(tmp_path, BASE.replace("      - {id: ro, kind: readonly_fs, target: slave}\n",
                                             "      - {id: ro, kind: readonly_fs, target: slave}\n"
                                             "    expect:\n      - {outcome: SEND_OK, metric: count, max: 0}\n"))
    assert [(e.phase, e.metric) for e in s.expect] == [("healthy", "share"), ("outage", "count")]


def test_matrix_expands_every_combination(tmp_path: Path) -> None:
    runs = _load_text(tmp_path, BASE.replace("expect:\n", """matrix:
  cluster.version: ["4.9.1", "4.9.3"]
  fallbehind:
    - {name: default, set: {}}
    - {name: 1m, set: {cluster.broker.master.haSlaveFallbehindMax: 1048576, phases.outage.duration: 7s}}
expect:
"""))
    assert [r.name for r in runs] == [
        "base.version=4.9.1.fallbehind=default", "base.version=4.9.1.fallbehind=1m",
        "base.version=4.9.3.fallbehind=default", "base.version=4.9.3.fallbehind=1m"]
    assert [r.cluster.version for r in runs] == ["4.9.1", "4.9.1", "4.9.3", "4.9.3"]
    assert runs[1].cluster.broker.master == {"haSlaveFallbehindMax": 1048576}
    assert runs[0].cluster.broker.master == {}
    assert [r.phases[2].duration for r in runs] == [5.0, 7.0, 5.0, 7.0]
    assert runs[3].variant == {"cluster.version": "4.9.3", "fallbehind": "1m"}
    assert "matrix" not in runs[0].resolved()


def test_key_the_version_lacks_passes_when_allowed(tmp_path: Path) -> None:
    (s,) = _load_text(tmp_path, BASE.replace('version: "4.9.1"\n  store_size: 64MiB\n  broker:\n',
                                             'version: "5.3.0"\n  store_size: 64MiB\n'
                                             '  allow_keys: [haSlaveFallbehindMax]\n'
                                             '  broker:\n    master: {haSlaveFallbehindMax: 1048576}\n'))
    assert s.cluster.broker.master["haSlaveFallbehindMax"] == 1048576


def test_every_ready_scenario_is_valid() -> None:
    files = sorted((Path(__file__).resolve().parents[2] / "scenarios").glob("*.yaml"))
    assert {f.name for f in files} >= {"slave-readonly-default.yaml", "slave-readonly-fallbehind-1m.yaml"}
    for f in files:
        assert load_scenarios(f), f
