"""The broker program of a local node: the embedded emulator (`python -m emulator.namesrv|broker`, the default) or
an Apache RocketMQ binary distribution at `$ROCKETMQ_HOME` (`bin/mqnamesrv`, `bin/mqbroker`), with the same conf
files. Both get a small heap from the scenario: the emulator through `HEAP_OPTS`, Apache's scripts through
`JAVA_OPT_EXT` (appended after the script's own `-Xms8g -Xmx8g`, and the JVM takes the last), plus
`-Duser.home=<node dir>` so its `~/logs/rocketmqlogs` and `~/store` defaults stay inside the node's directory."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

ROCKETMQ_HOME_ENV = "ROCKETMQ_HOME"
APACHE_BIN = {"namesrv": "bin/mqnamesrv", "broker": "bin/mqbroker"}
PATH_ENV = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class ProgramError(RuntimeError):
    """The chosen broker program cannot be started here (one line, says what to set)."""


@dataclass(frozen=True)
class Program:
    kind: str  # "emulator" | "apache"
    home: Path | None = None

    @classmethod
    def choose(cls, kind: str) -> Program:
        if kind == "emulator":
            return cls("emulator")
        home = os.environ.get(ROCKETMQ_HOME_ENV)
        if not home:
            raise ProgramError(f"cluster.program is apache but ${ROCKETMQ_HOME_ENV} is not set; set it to an "
                               "unpacked rocketmq-all-<version>-bin-release directory")
        for rel in APACHE_BIN.values():
            if not os.access(Path(home) / rel, os.X_OK):
                raise ProgramError(f"${ROCKETMQ_HOME_ENV}={home}: {rel} is missing or not executable")
        return cls("apache", Path(home))

    def argv(self, role: str, conf: Path) -> list[str]:
        kind = "namesrv" if role == "namesrv" else "broker"
        if self.kind == "emulator":
            return [sys.executable, "-m", f"emulator.{kind}", "-c", str(conf)]
        assert self.home is not None
        return [str(self.home / APACHE_BIN[kind]), "-c", str(conf)]

    def env(self, *, version: str, heap: str, node_dir: Path, log_dir: Path) -> dict[str, str]:
        env = {"PATH": os.environ.get("PATH", PATH_ENV), "HOME": str(node_dir), "LANG": "C.UTF-8",
               "ROCKETMQ_VERSION": version, "ROCKETMQ_LOG_DIR": str(log_dir)}
        if self.kind == "emulator":
            env.update({"HEAP_OPTS": heap, "RMQ_EMULATOR_BIND": "127.0.0.1",
                        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
        else:
            assert self.home is not None
            env.update({"ROCKETMQ_HOME": str(self.home), "JAVA_OPT_EXT": f"{heap} -Duser.home={node_dir}"})
            if os.environ.get("JAVA_HOME"):
                env["JAVA_HOME"] = os.environ["JAVA_HOME"]
        return env

    def log_dirs(self, node_dir: Path, log_dir: Path) -> list[Path]:
        return [log_dir] if self.kind == "emulator" else [node_dir / "logs" / "rocketmqlogs"]
