"""The local driver's JVM flags follow the size of what the job reads: C1 and the serial collector under
`SMALL_INPUT_BYTES` of part files, Spark's own above it or when the size is unknown; a run directory's size is the
sum of its valid part files."""
from __future__ import annotations

from pathlib import Path

from known_runs import clean_run

from analysis import session
from analysis.rundir import open_run_dir


def test_small_inputs_get_c1_and_the_serial_collector():
    assert session.driver_jvm_options(0) == session.SMALL_INPUT_JVM_OPTIONS
    assert "-XX:TieredStopAtLevel=1" in session.driver_jvm_options(session.SMALL_INPUT_BYTES - 1)
    assert session.driver_jvm_options(session.SMALL_INPUT_BYTES) == ""
    assert session.driver_jvm_options(None) == ""


def test_a_run_directorys_input_is_its_part_files(tmp_path: Path):
    path, _ = clean_run(tmp_path)
    run = open_run_dir(path)
    parts = [f for files in run.parts.values() for f in files]
    assert parts and run.input_bytes == sum(f.stat().st_size for f in parts) > 0
    (path / "requests" / "notes.txt").write_text("x" * 10_000)  # not a part file: not read, not counted
    assert open_run_dir(path).input_bytes == run.input_bytes
