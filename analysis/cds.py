"""The local driver JVM's class archive (JDK class data sharing): a report's driver maps the classes an earlier
report loaded instead of loading and verifying them again from Spark's jars.

A driver started without the archive writes it when it exits (`-XX:ArchiveClassesAtExit`); `finish` ends that
JVM once the job is done, waits for it, and renames the written file into place, so an archive is only ever read
once whole. One driver at a time writes it (a lock file); reports started meanwhile run without one. The archive is build output like the JVM aggregates' jar: cached under `$RMQ_CHAOS_CACHE` (default
`~/.cache/rmq-chaos`, about 190 MB), named by a hash of everything it must match (the Java runtime, where Spark's
jars are and which, the aggregates' jar and the driver's JVM flags). A JVM that cannot use it (another runtime, a
changed class path) runs as if it were absent. Measured in docs/analysis.md ("The driver's class archive").
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

from analysis import jvm

QUIET = "-Xlog:cds*=off"  # a dump lists every class it skips (signed jars, old class files) on stdout
DUMP_TIMEOUT_S = 120
EXIT_TIMEOUT_S = 10
DISABLE_ENV = "RMQ_CHAOS_CLASS_ARCHIVE"  # "off": no archive is read or written
STALE_S = 600  # a `.part` or lock left by a driver that was killed while writing the archive
UNUSED_ARCHIVE_S = 30 * 86400


@dataclass(frozen=True)
class Archive:
    """The archive for one driver configuration; `part` is where this process's driver writes it, `writing` whether
    it does (decided by `prepare`: only one driver at a time writes a missing archive, the one holding `lock`)."""

    path: Path
    part: Path
    writing: bool = False

    @property
    def lock(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    def jvm_options(self) -> str:
        if self.writing:
            return f"-XX:ArchiveClassesAtExit={self.part} {QUIET}"
        return f"-XX:SharedArchiveFile={self.path} {QUIET}"


def java_home() -> Path | None:
    """The Java runtime spark-submit starts: $JAVA_HOME, else the `java` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return Path(home).resolve()
    found = shutil.which("java")
    return Path(found).resolve().parent.parent if found else None


def archive_for(driver_options: str) -> Archive | None:
    """The archive matching this runtime, Spark's jars, the aggregates' jar and `driver_options`; None when no
    Java runtime can be found or $RMQ_CHAOS_CLASS_ARCHIVE is "off"."""
    home = java_home()
    if home is None or os.environ.get(DISABLE_ENV, "").lower() == "off":
        return None
    digest = hashlib.sha256(f"{home}\0{driver_options}\0".encode())
    release = home / "release"
    digest.update(release.read_bytes() if release.is_file() else str((home / "lib").stat().st_mtime_ns).encode())
    jars = jvm.spark_jars_dir().resolve()  # the class path's own paths: another install's archive does not fit
    digest.update(f"{jars}\0".encode())
    for jar in sorted(jars.glob("*.jar")):
        digest.update(f"{jar.name}\0{jar.stat().st_size}\0".encode())
    digest.update(jvm.jar_path().name.encode())
    path = jvm.cache_dir() / f"driver-classes-{digest.hexdigest()[:16]}.jsa"
    return Archive(path, path.with_name(f"{path.name}.{os.getpid()}.part"))


def prepare(archive: Archive) -> Archive | None:
    """The archive to start the driver with: read when it exists (marked used now), written when it does not and no
    other driver is writing it (this one takes its lock); None otherwise, and when the cache cannot be written (a
    read-only home, another user's files): the driver then runs without one. Also removes what no driver uses any
    more: `.part` and lock files older than STALE_S, archives unused for UNUSED_ARCHIVE_S (another install's)."""
    now = time.time()
    try:
        archive.path.parent.mkdir(parents=True, exist_ok=True)
        for old in archive.path.parent.glob("driver-classes-*"):
            limit = UNUSED_ARCHIVE_S if old.suffix == ".jsa" else STALE_S
            try:
                if old != archive.path and now - old.stat().st_mtime > limit:
                    old.unlink()
            except FileNotFoundError:  # another report removed it first
                continue
        if archive.path.is_file():
            os.utime(archive.path)
            return replace(archive, writing=False)
        os.close(os.open(archive.lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except OSError:  # FileExistsError: another driver is writing it
        return None
    return replace(archive, writing=True)


def finish(archive: Archive, ok: bool) -> bool:
    """After the session stopped: end its driver JVM. When it was writing the archive and the job went well, wait
    for the write and put the archive in place (True); otherwise kill it at once (a failed or interrupted job does
    not wait seconds for a dump) and drop what it wrote. Later sessions of this process start a new driver."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if gateway is None or proc is None:
        return False
    SparkContext._gateway = None
    SparkContext._jvm = None
    try:
        gateway.shutdown()
    except Exception:  # noqa: BLE001 - the connection may already be gone; the process is what matters
        pass
    done = False
    try:
        if ok:
            proc.stdin.close()  # the gateway exits on EOF; a JVM writing the archive does so on its way out
            code = proc.wait(timeout=DUMP_TIMEOUT_S if archive.writing else EXIT_TIMEOUT_S)
            done = archive.writing and code == 0 and archive.part.is_file()
        if done:
            os.chmod(archive.part, 0o644)
            os.replace(archive.part, archive.path)
    except (OSError, subprocess.TimeoutExpired):
        done = False
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        archive.part.unlink(missing_ok=True)
        if archive.writing:
            archive.lock.unlink(missing_ok=True)
    return done
