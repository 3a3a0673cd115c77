"""A Spark standalone cluster on 127.0.0.1 (one master, one worker) from the pip-installed PySpark, for the test of
`rmq-chaos report --master spark://...`. Each daemon runs in its own process group, ended by its id."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

START_TIMEOUT_S = 120
STOP_TIMEOUT_S = 20
WORKER_MEMORY = "2g"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class StandaloneCluster:
    workdir: Path
    port: int = field(default_factory=free_port)
    procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        home = Path(pyspark.__file__).parent
        return {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
                "SPARK_WORKER_DIR": str(self.workdir / "work"), "SPARK_LOG_DIR": str(self.workdir / "logs"),
                "SPARK_NO_DAEMONIZE": "1"}

    def _spawn(self, name: str, *args: str) -> None:
        spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
        log = open(self.workdir / f"{name}.log", "w")  # noqa: SIM115 - the daemon writes to it until stop()
        self.procs.append(subprocess.Popen([str(spark_class), *args], stdout=log, stderr=subprocess.STDOUT,
                                           env=self.env(), start_new_session=True))

    def start(self) -> StandaloneCluster:
        (self.workdir / "work").mkdir(parents=True, exist_ok=True)
        self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                    str(self.port), "--webui-port", str(free_port()))
        self._spawn("worker", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "2",
                    "--memory", WORKER_MEMORY, "--webui-port", str(free_port()), self.url)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if "Registering worker" in (self.workdir / "master.log").read_text(errors="replace"):
                return self
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.2)
        logs = {n: (self.workdir / f"{n}.log").read_text(errors="replace")[-2000:] for n in ("master", "worker")}
        self.stop()
        raise RuntimeError(f"the standalone cluster did not come up: {logs}")

    def stop(self) -> None:
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        for p in self.procs:
            try:
                p.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs.clear()
