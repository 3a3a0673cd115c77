"""`rmq-chaos report --master spark://...` on a Spark standalone cluster of one master and two workers on 127.0.0.1,
each worker with its own work directory (`--work-dir`) and its own local directories (`SPARK_LOCAL_DIRS`), as two
machines would have; the run directory is given as a `file:` URI, the form executors on other hosts resolve (a
mount at the same path on every host, docs/analysis.md "On a Spark cluster").

The report it writes is the local[2] report of the same run directory byte for byte: every Parquet file under
`report/` and `verdict.json` (both are written on the driver, by pyarrow and json, from the small results the job
collects, so nothing host- or time-dependent enters them; `summary.json`, `junit.xml` and `index.html` are not
compared: they are rendered from the same results). The JVM aggregates reach the executors: the plans that ran name
them, every executor fetched their jar, and the job did not print its one-line fallback. Both workers ran tasks: each
worker's own JSON API lists an executor of the application, and Spark's event log has successful tasks on both.

The run directory is `group_runs.two_group_run` (1,502 sends in two broker groups: the per-group Parquet files are
among the outputs compared), under a directory whose name has a space (escaped in the URI as `%20`)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark
import pytest
from group_runs import two_group_run
from process_group import run_group
from spark_cluster import free_port
from waiting import poll

from analysis import jvm
from analysis.job import analyze

pytestmark = pytest.mark.spark

START_TIMEOUT_S = 120
STOP_TIMEOUT_S = 20
REPORT_TIMEOUT_S = 300
WORKERS = 2
WORKER_CORES = 1  # CI has 2 cores: one per worker
AGGREGATES = (jvm.SECOND_RANKS, jvm.MICROS_HISTOGRAM, jvm.HISTOGRAM_RANKS)


def _json(url: str):
    with urllib.request.urlopen(url, timeout=5) as r:  # noqa: S310 - our own daemons on 127.0.0.1
        return json.load(r)


BOUND_RE = re.compile(r"Bound (?:Master|Worker)WebUI to \S+ and started at https?://[^:/\s]+:(\d+)")
"""A daemon's log line naming the port its web UI took: the one asked for, or a later one when another process took
that in the moment between `free_port` and the bind (Spark then tries the next ports; in CI another test's Spark UI
once sat on the port asked for, answering /json/ with its HTML)."""


def bound_ui_port(log: Path) -> int | None:
    """The web UI port a Spark daemon's log says it bound, None before that line."""
    try:
        m = BOUND_RE.search(log.read_text(errors="replace"))
    except OSError:
        return None
    return int(m.group(1)) if m else None


@dataclass
class TwoWorkers:
    """A standalone master and two workers, each daemon in its own process group (ended by its pid)."""

    root: Path
    port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    worker_ui_ports: list[int] = field(default_factory=lambda: [free_port() for _ in range(WORKERS)])
    procs: list[subprocess.Popen] = field(default_factory=list)
    memory: str = "1g"
    """what each worker offers (benchmarks/analysis_cost_per_row.py asks for more)"""

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def worker_dir(self, n: int) -> Path:
        return self.root / f"worker-{n}"

    def _spawn(self, name: str, args: list[str], env: dict[str, str] | None = None) -> None:
        spark_home = Path(pyspark.__file__).parent
        log = open(self.root / f"{name}.log", "w")  # noqa: SIM115 - the daemon writes to it until stop()
        self.procs.append(subprocess.Popen(
            [str(spark_home / "bin" / "spark-class"), *args], stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, env={**os.environ, "SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": "127.0.0.1",
                                         "SPARK_LOG_DIR": str(self.root / "logs"), "SPARK_NO_DAEMONIZE": "1",
                                         **(env or {})}))
        log.close()

    def _alive(self) -> list[dict]:
        if any(p.poll() is not None for p in self.procs):
            logs = {p.name: p.read_text(errors="replace")[-1500:] for p in self.root.glob("*.log")}
            raise AssertionError(f"a Spark daemon exited: {logs}")
        port = bound_ui_port(self.root / "master.log")
        if port is None:
            return []
        self.ui_port = port
        try:
            state = _json(f"http://127.0.0.1:{port}/json/")
        except OSError:
            return []
        return [w for w in state["workers"] if w["state"] == "ALIVE"]

    def start(self) -> TwoWorkers:
        self.root.mkdir(parents=True)
        self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                               str(self.port), "--webui-port", str(self.ui_port)])
        for n, ui in enumerate(self.worker_ui_ports):
            work, local = self.worker_dir(n) / "work", self.worker_dir(n) / "local"
            work.mkdir(parents=True)
            local.mkdir()
            self._spawn(f"worker-{n}", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores",
                                        str(WORKER_CORES), "--memory", self.memory, "--work-dir", str(work),
                                        "--webui-port", str(ui), self.url], env={"SPARK_LOCAL_DIRS": str(local)})
        poll(lambda: len(self._alive()) == WORKERS, START_TIMEOUT_S, "two ALIVE workers in the master's /json/",
             interval_s=0.2)
        return self

    def stop(self) -> None:
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)  # the worker's group holds its executors too
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs.clear()


@pytest.fixture
def cluster(tmp_path):
    c = TwoWorkers(tmp_path / "spark")
    try:
        yield c.start()
    finally:
        c.stop()
        shutil.rmtree(c.root, ignore_errors=True)


@pytest.fixture
def run_dir(tmp_path):
    path, _ = two_group_run(tmp_path / "runs on nfs")  # a space: escaped in the URI, unescaped for Hadoop's Path
    yield path
    shutil.rmtree(path.parent, ignore_errors=True)


def _events(event_dir: Path) -> list[dict]:
    """The application's event log (Spark 4 rolls it by default: `eventlog_v2_<app>/events_<n>_<app>` files)."""
    files = sorted((p for p in event_dir.rglob("*") if p.is_file() and "app-" in p.name and not p.name.startswith(
        ("appstatus_", "."))), key=lambda p: (len(p.name), p.name))
    assert files, f"no event log in {event_dir}: {sorted(p.name for p in event_dir.rglob('*'))}"
    return [json.loads(line) for f in files for line in f.read_text().splitlines() if line]


def _outputs(report: Path) -> dict[str, bytes]:
    """The report's Parquet files and its verdict, by name."""
    return {p.name: p.read_bytes() for p in sorted(report.iterdir()) if p.suffix == ".parquet"
            or p.name == "verdict.json"}


@pytest.mark.long
def test_report_on_two_workers_is_local_mode_byte_for_byte(cluster, run_dir, spark, tmp_path):
    events = tmp_path / "events"
    events.mkdir()
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "SPARK_LOCAL_DIRS": str(tmp_path / "driver-local")}
    conf = {"spark.driver.host": "127.0.0.1", "spark.sql.shuffle.partitions": "4", "spark.executor.memory": "768m",
            "spark.cores.max": str(WORKERS * WORKER_CORES), "spark.executor.cores": str(WORKER_CORES),
            # the first job waits for both executors, and a task never waits for a busy executor it prefers
            "spark.scheduler.minRegisteredResourcesRatio": "1.0", "spark.scheduler.maxRegisteredResourcesWaitingTime":
            f"{START_TIMEOUT_S}s", "spark.locality.wait": "0",
            "spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri(),
            "spark.eventLog.compress": "false"}
    uri = run_dir.as_uri()  # file:///.../runs%20on%20nfs/two-groups
    try:
        proc = run_group([sys.executable, "-m", "harness.cli", "report", "--no-progress", "--master", cluster.url,
                          *(a for k, v in conf.items() for a in ("--conf", f"{k}={v}")), uri],
                         timeout=REPORT_TIMEOUT_S, env=env)
        assert proc.returncode in (0, 1, 2), proc.stderr[-3000:]
        assert "not the JVM aggregates" not in proc.stderr, proc.stderr[-2000:]  # the job's one-line fallback
        local = analyze([run_dir], out=tmp_path / "local-report", spark=spark, progress=False)

        on_cluster, in_local = _outputs(run_dir / "report"), _outputs(tmp_path / "local-report")
        assert proc.returncode == local.exit_code
        assert {"verdict.json", "per_second.parquet", "per_phase.parquet", "per_group.parquet"} <= set(on_cluster)
        assert on_cluster.keys() == in_local.keys()
        for name, data in on_cluster.items():
            assert data == in_local[name], f"report/{name} differs between the cluster and local[2]"

        log = _events(events)
        app_id = next(e["App ID"] for e in log if e["Event"] == "SparkListenerApplicationStart")
        plans = " ".join(e.get("physicalPlanDescription", "") for e in log
                         if e["Event"].endswith("SparkListenerSQLExecutionStart"))
        assert all(name in plans for name in AGGREGATES), "the plans that ran do not use the JVM aggregates"
        tasks: dict[str, int] = {}
        for e in log:
            if e["Event"] == "SparkListenerTaskEnd" and e["Task End Reason"]["Reason"] == "Success":
                executor = e["Task Info"]["Executor ID"]
                tasks[executor] = tasks.get(executor, 0) + 1

        for n, asked in enumerate(cluster.worker_ui_ports):  # each worker: an executor of the app that ran tasks
            ui = bound_ui_port(cluster.root / f"worker-{n}.log") or asked
            state = _json(f"http://127.0.0.1:{ui}/json/")
            mine = [str(x["id"]) for x in state["executors"] + state["finishedexecutors"] if x["appid"] == app_id]
            assert mine, f"worker {n} ran no executor of {app_id}: {state}"
            assert any(tasks.get(x, 0) > 0 for x in mine), f"worker {n}'s executors {mine} completed no task: {tasks}"
            for x in mine:
                lines = (cluster.worker_dir(n) / "work" / app_id / x / "stderr").read_text(errors="replace")
                added = [ln for ln in lines.splitlines() if "Adding file:" in ln and "to class loader" in ln]
                assert any(jvm.jar_path().name in ln for ln in added), f"executor {x}: {added or lines[-2000:]}"
                assert f"Created local directory at {cluster.worker_dir(n) / 'local'}/" in lines, lines[-2000:]
    finally:
        shutil.rmtree(events, ignore_errors=True)
        shutil.rmtree(tmp_path / "local-report", ignore_errors=True)
        shutil.rmtree(tmp_path / "driver-local", ignore_errors=True)
