"""The job's JVM aggregates (analysis/jvm/*.java): built into a jar with the JDK's javac against PySpark's own jars,
cached, put on the session's class path and registered as SQL functions.

The aggregates compute the same exact nearest-rank percentiles as the Spark SQL expressions in `analysis.stats`
(which remain the fallback and the reference), from primitive values instead of Spark's boxed lists and per-row
counting. Without a JDK (no `javac`) the job still runs, on the SQL expressions; `python -m analysis.jvm` builds
the jar ahead of time (setup.sh does) and prints where it is.

The jar is build output: it is cached under `$RMQ_CHAOS_CACHE` (default `~/.cache/rmq-chaos`), named by a hash of
the Java sources and the Spark version, so a change to either builds a new one.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

SOURCE_DIR = Path(__file__).with_name("jvm")
FUNCTIONS_CLASS = "rmqchaos.analysis.Functions"
SECOND_RANKS = "rmq_second_ranks"
MICROS_HISTOGRAM = "rmq_micros_histogram"
HISTOGRAM_RANKS = "rmq_histogram_ranks"
QUEUE_REORDERS = "rmq_queue_reorders"
"""The SQL names Functions.register gives the aggregates (Functions.java says the same)."""
JAVA_RELEASE = "17"
BUILD_TIMEOUT_S = 300


class JvmBuildError(RuntimeError):
    """javac failed on the aggregates' sources (its first lines of output are in the message)."""


def sources() -> list[Path]:
    return sorted(SOURCE_DIR.rglob("*.java"))


def spark_jars_dir() -> Path:
    """Where the Spark jars to compile against are: $SPARK_HOME/jars when set, else PySpark's own."""
    home = os.environ.get("SPARK_HOME")
    if home and (Path(home) / "jars").is_dir():
        return Path(home) / "jars"
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def cache_dir() -> Path:
    base = os.environ.get("RMQ_CHAOS_CACHE")
    return Path(base) if base else Path.home() / ".cache" / "rmq-chaos"


def jar_path() -> Path:
    """The jar for these sources and this Spark version (whether it exists yet or not)."""
    import pyspark

    digest = hashlib.sha256(pyspark.__version__.encode())
    for src in sources():
        digest.update(src.relative_to(SOURCE_DIR).as_posix().encode() + b"\0" + src.read_bytes())
    return cache_dir() / f"rmq-chaos-analysis-{digest.hexdigest()[:16]}.jar"


def javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(Path(home) / "bin" / "javac", os.X_OK):
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def build() -> Path | None:
    """The jar, compiled now if it is not cached yet; None when there is no javac. Raises JvmBuildError when
    javac fails. Safe when several processes build at once (each writes its own file, then renames it)."""
    target = jar_path()
    if target.is_file():
        return target
    compiler = javac()
    if compiler is None:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rmq-chaos-jvm-") as tmp:
        classes = Path(tmp) / "classes"
        cmd = [compiler, "--release", JAVA_RELEASE, "-nowarn", "-encoding", "UTF-8",
               "-cp", str(spark_jars_dir() / "*"), "-d", str(classes), *map(str, sources())]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            raise JvmBuildError(f"javac exited {done.returncode}: " + " | ".join(lines[:5]))
        fd, partial = tempfile.mkstemp(prefix=target.name + ".", dir=target.parent)
        os.close(fd)
        try:
            with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
                jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nCreated-By: rmq-chaos\r\n\r\n")
                for cls in sorted(classes.rglob("*.class")):
                    jar.write(cls, cls.relative_to(classes).as_posix())
            os.chmod(partial, 0o644)  # mkstemp's 0600 would keep other users' sessions from reading it
            os.replace(partial, target)
        finally:
            Path(partial).unlink(missing_ok=True)
    return target


def jar_or_none() -> Path | None:
    """The jar when it is cached or can be built; None (and the reason on stderr) when it cannot."""
    try:
        return build()
    except (JvmBuildError, OSError, subprocess.TimeoutExpired) as e:
        print(f"rmq-chaos: the JVM aggregates were not built ({e}); Spark SQL computes the percentiles",
              file=sys.stderr)
        return None


def ready(spark) -> bool:
    """True when the session has the aggregates as SQL functions, registering them first if their class is on its
    class path (the session was started with the jar: `analysis.session.get_session` does that)."""
    if spark.catalog.functionExists(SECOND_RANKS):
        return True
    from py4j.java_gateway import JavaClass

    holder = spark.sparkContext._jvm
    for part in FUNCTIONS_CLASS.split("."):
        holder = getattr(holder, part)
    if not isinstance(holder, JavaClass):
        return False
    holder.register(spark._jsparkSession)
    return True


def why_not(spark) -> str | None:
    """None when the session has the aggregates (`ready`); otherwise why it has not, in words for one line."""
    if ready(spark):
        return None
    if not jar_path().is_file():
        return "no jar: " + ("no javac to build analysis/jvm (install a JDK)" if javac() is None else
                             "its build failed (the line above)")
    return f"the session's class path has no {FUNCTIONS_CLASS} (under spark-submit give --jars {jar_path()})"


def main() -> int:
    try:
        path = build()
    except (JvmBuildError, subprocess.TimeoutExpired) as e:
        print(f"analysis.jvm: {e}", file=sys.stderr)
        return 1
    if path is None:
        print("analysis.jvm: no javac (install a JDK, e.g. Debian's default-jdk-headless); the job will compute "
              "percentiles with Spark SQL", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
