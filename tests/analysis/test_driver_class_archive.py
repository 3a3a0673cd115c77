"""The local driver's class archive (analysis.cds): the first driver writes it whole (never a half-written file in
its place), a later driver maps it, a failed job does not wait for it, and it is named by what it must match.
(`analysis.job.analyze` does the same calls; every report of the suite's scenario runs goes through them.)"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from process_group import run_group

from analysis import cds

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, os, sys
from analysis import cds, session
archive = cds.prepare(session.own_driver_archive(None, (), 0))
spark = session.get_session(input_bytes=0, archive=archive)
from pyspark import SparkContext
pid = SparkContext._gateway.proc.pid
maps = open(f"/proc/{pid}/maps").read()
assert spark.range(1000).count() == 1000
spark.stop()
done = cds.finish(archive, ok=sys.argv[1] == "ok")
print(json.dumps({"pid": pid, "mapped": str(archive.path) in maps, "written": done, "path": str(archive.path),
                  "jvm_left": os.path.exists(f"/proc/{pid}")}))
"""


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "RMQ_CHAOS_CACHE": str(cache), "PYTHONPATH": str(ROOT)}


def _probe(cache: Path, outcome: str) -> dict:
    done = run_group([sys.executable, "-c", PROBE, outcome], timeout=300, env=_env(cache), cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_archive_is_named_by_the_driver_flags_and_can_be_turned_off(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("RMQ_CHAOS_CACHE", str(tmp_path))
    small, large = cds.archive_for("-XX:TieredStopAtLevel=1"), cds.archive_for("")
    assert small is not None and large is not None and small.path != large.path
    assert small.path.parent == tmp_path and small.path.suffix == ".jsa"
    other = tmp_path / "spark-home"
    (other / "jars").mkdir(parents=True)
    (other / "jars" / "spark-core.jar").write_bytes(b"")
    monkeypatch.setenv("SPARK_HOME", str(other))  # another install's jars: another class path, another archive
    assert cds.archive_for("").path != large.path
    monkeypatch.setenv(cds.DISABLE_ENV, "off")
    assert cds.archive_for("") is None


def test_one_driver_writes_a_missing_archive_and_the_others_run_without(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("RMQ_CHAOS_CACHE", str(tmp_path))
    archive = cds.archive_for("")
    writer = cds.prepare(archive)
    assert writer is not None and writer.writing and writer.lock.exists()
    assert "-XX:ArchiveClassesAtExit=" + str(writer.part) in writer.jvm_options()
    assert cds.prepare(archive) is None  # the lock is held: no second writer, no half-written archive to read
    archive.path.write_bytes(b"")
    reader = cds.prepare(archive)
    assert reader is not None and not reader.writing
    assert "-XX:SharedArchiveFile=" + str(archive.path) in reader.jvm_options()


def test_prepare_removes_what_no_driver_uses(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("RMQ_CHAOS_CACHE", str(tmp_path))
    archive = cds.archive_for("")
    stale, fresh = tmp_path / "driver-classes-0.jsa.1.part", tmp_path / "driver-classes-0.jsa.2.part"
    unused, recent = tmp_path / "driver-classes-1.jsa", tmp_path / "driver-classes-2.jsa"
    dead_lock = archive.lock
    for f in (stale, fresh, unused, recent, dead_lock):
        f.write_bytes(b"x")
    for f, age in ((stale, cds.STALE_S), (unused, cds.UNUSED_ARCHIVE_S), (dead_lock, cds.STALE_S),
                   (recent, cds.STALE_S)):
        old = time.time() - age - 60
        os.utime(f, (old, old))
    writer = cds.prepare(archive)  # the killed writer's lock is stale: this driver writes the archive
    assert writer is not None and writer.writing
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([fresh.name, recent.name, dead_lock.name])
    assert dead_lock.stat().st_mtime > time.time() - cds.STALE_S  # taken anew


def test_a_cache_that_cannot_be_written_means_no_archive(tmp_path: Path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("RMQ_CHAOS_CACHE", str(tmp_path / "file" / "cache"))  # under a file: mkdir fails
    archive = cds.archive_for("")
    assert archive is not None and cds.prepare(archive) is None
    assert (tmp_path / "file").is_file()


def test_a_failed_job_keeps_none_then_the_first_driver_writes_it_and_the_next_maps_it(tmp_path: Path):
    failed = _probe(tmp_path, "failed")  # killed at once: no archive, no `.part`, no lock, no JVM
    assert not failed["written"] and not failed["jvm_left"] and not failed["mapped"], failed
    assert list(tmp_path.glob("driver-classes-*")) == []
    first = _probe(tmp_path, "ok")
    assert first["written"] and not first["mapped"] and not first["jvm_left"], first
    archives = sorted(tmp_path.glob("driver-classes-*"))
    assert archives == [Path(first["path"])]  # whole, renamed into place; no `.part` or lock left
    second = _probe(tmp_path, "ok")
    assert second["mapped"] and second["path"] == first["path"] and not second["written"], second
    assert not second["jvm_left"]
