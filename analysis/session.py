"""The Spark session of the analysis job: local[2] by default, quiet, no UI; `--master URL` passes through.

Local mode binds to 127.0.0.1 only (`SPARK_LOCAL_IP`, driver host and bind address) and uses few shuffle
partitions; with a cluster master those stay Spark's (the executors must reach the driver).

Under `spark-submit` the master and the rest of the configuration come from spark-submit; this module then only
adds the settings that the job needs to be right (UTC session time zone) and leaves the rest alone.
"""
from __future__ import annotations

import atexit
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import SparkSession

from analysis import cds, jvm

DEFAULT_MASTER = "local[2]"
APP_NAME = "rmq-chaos-report"
LOCAL_IP = "127.0.0.1"
SHUFFLE_PARTITIONS = 8
DRIVER_MEMORY = "4g"
LOG_LEVEL = "ERROR"
LOG4J2_PROPERTIES = """\
status = error
name = rmq-chaos-quiet
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
rootLogger.level = {level}
rootLogger.appenderRef.stdout.ref = console
logger.repl.name = org.apache.spark.api.python.PythonGatewayServer
logger.repl.level = {level}
"""

SMALL_INPUT_BYTES = 200 * 1024 * 1024
SMALL_INPUT_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""Under SMALL_INPUT_BYTES of part files the local driver's JIT stops at C1 and it collects with the serial
collector: a short job's CPU went mostly to C2 compiling and parallel GC threads. Above it C2's code pays for its
compiling. Measured with `rmq-chaos report` (docs/analysis.md, "The driver JVM"): a seed run (4 MB) 36 -> 20 CPU
s, wall 20 -> 17 s; issue 44's ten-minute shape (166 MB, 1.19M sends, 2.38M deliveries) 53 -> 42 CPU s, wall 32
-> 28 s; but twice that shape (456 MB) 38 s wall with C2 against 43 s with C1. A `spark.driver.extraJavaOptions`
given with `--conf` replaces them."""


def driver_jvm_options(input_bytes: int | None) -> str:
    """The local driver's JVM flags for a job reading `input_bytes` of part files (None: unknown, Spark's own)."""
    return SMALL_INPUT_JVM_OPTIONS if input_bytes is not None and input_bytes < SMALL_INPUT_BYTES else ""


def under_spark_submit() -> bool:
    """True when this Python process was started by spark-submit (the JVM already exists)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def _log4j_file(level: str) -> Path:
    fd, name = tempfile.mkstemp(prefix="rmq-chaos-log4j2-", suffix=".properties")
    with os.fdopen(fd, "w") as f:
        f.write(LOG4J2_PROPERTIES.replace("{level}", level))
    atexit.register(lambda: Path(name).unlink(missing_ok=True))
    return Path(name)


def own_driver_archive(master: str | None, conf: Sequence[tuple[str, str]],
                       input_bytes: int | None) -> cds.Archive | None:
    """The class archive for the local driver `get_session` would start with these arguments; None when it
    would start none (a session is active, spark-submit started it, a cluster master) or when `conf` sets the
    driver's JVM flags itself, or when this process's driver JVM already runs (a stopped session's)."""
    from pyspark import SparkContext

    if SparkSession.getActiveSession() is not None or SparkContext._gateway is not None:
        return None
    if under_spark_submit() and not master:
        return None
    if not (master or DEFAULT_MASTER).startswith("local") or "spark.driver.extraJavaOptions" in dict(conf):
        return None
    return cds.archive_for(driver_jvm_options(input_bytes))


def get_session(master: str | None = None, log_level: str = LOG_LEVEL, shuffle_partitions: int = SHUFFLE_PARTITIONS,
                conf: Sequence[tuple[str, str]] = (), input_bytes: int | None = None,
                archive: cds.Archive | None = None) -> SparkSession:
    """The active session, or a new one: `master` (default local[2]) with quiet logs and no web UI; `conf` pairs
    are applied last (they win over these defaults); `input_bytes`, the size of what the job reads, picks the
    local driver's JVM flags (`driver_jvm_options`); `archive` (from `own_driver_archive`) adds the flags that read
    or write the driver's class archive (`analysis.cds`; the caller calls `cds.finish` after stopping the session).

    A session that already runs (a test's session, spark-submit's) is reused as it is."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(APP_NAME).config("spark.sql.session.timeZone", "UTC")
    if not under_spark_submit() or master:
        url = master or DEFAULT_MASTER
        log4j = _log4j_file(log_level)
        builder = (
            builder.master(url)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.adaptive.enabled", "true")
            .config("spark.driver.extraJavaOptions", " ".join(o for o in (
                f"-Dlog4j.configurationFile=file:{log4j}", driver_jvm_options(input_bytes),
                archive.jvm_options() if archive is not None else "") if o))
        )
        if url.startswith("local"):  # one machine: loopback only, few partitions; a cluster keeps its defaults
            os.environ.setdefault("SPARK_LOCAL_IP", LOCAL_IP)
            builder = (
                builder.config("spark.driver.memory", DRIVER_MEMORY)
                .config("spark.driver.host", LOCAL_IP)
                .config("spark.driver.bindAddress", LOCAL_IP)
                .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
                .config("spark.default.parallelism", str(shuffle_partitions))
            )
    extra = dict(conf)
    if not under_spark_submit() or master:
        jar = jvm.jar_or_none()
        if jar is not None:
            extra["spark.jars"] = ",".join(j for j in (str(jar), extra.get("spark.jars")) if j)
    for key, value in extra.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    return spark
