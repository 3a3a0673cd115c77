"""Run ids are unique on the machine: a name another live process holds, or whose cgroups are still there, is
never handed out again (two runs of one scenario started in the same second once shared their cgroups)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness import run_ids
from harness.rundir import RunDir
from harness.scenario import Scenario

HOLD = """
import sys
from harness import run_ids
assert run_ids.claim(sys.argv[1])
print("held", flush=True)
sys.stdin.read()
"""


def _scenario() -> Scenario:
    return Scenario.model_validate({"name": "same-second", "phases": [{"name": "healthy", "duration": "1s"}]})


def test_a_name_another_process_holds_is_not_handed_out_until_it_ends(tmp_path: Path) -> None:
    name = f"test-run-id-{tmp_path.name}"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, name], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, cwd=Path(__file__).resolve().parents[2])
    try:
        assert holder.stdout.readline().strip() == "held"
        assert not run_ids.claim(name)
        rd = RunDir.create(tmp_path / "a", _scenario(), name)
        assert rd.run_id == f"{name}-2"
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert run_ids.claim(name)
    run_ids.release(name)


def test_two_run_dirs_in_different_places_get_different_ids(tmp_path: Path) -> None:
    scenario = _scenario()
    first = RunDir.create(tmp_path / "a", scenario, "same-second-id")
    second = RunDir.create(tmp_path / "b", scenario, "same-second-id")
    assert first.run_id == "same-second-id"
    assert second.run_id == "same-second-id-2"
    for rid in (first.run_id, second.run_id):
        run_ids.release(rid)
