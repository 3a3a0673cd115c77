"""The broker program of a local node: the embedded emulator (`python -m emulator.namesrv|broker`, the default) or
an Apache RocketMQ binary distribution at `$ROCKETMQ_HOME` (`bin/mqnamesrv`, `bin/mqbroker`), with the same conf
files. Both get a small heap from the scenario: the emulator through `HEAP_OPTS`, Apache's scripts through
`JAVA_OPT_EXT` (appended after the script's own `-Xms8g -Xmx8g`, and the JVM takes the last), plus
`-Duser.home=<node dir>` so its `~/logs/rocketmqlogs` and `~/store` defaults stay inside the node's directory.

A distribution's version is read from its jars' names (`lib/rocketmq-broker-<version>.jar`, as in every
rocketmq-all-<version>-bin-release); one that is not the scenario's `cluster.version` is refused before anything
starts, as the compose backend refuses an image of another version: the run would record one version and run
another. `{version}` in `$ROCKETMQ_HOME` stands for `cluster.version`
(`ROCKETMQ_HOME=/opt/rocketmq-{version}` serves every run of a matrix over versions)."""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROCKETMQ_HOME_ENV = "ROCKETMQ_HOME"
APACHE_BIN = {"namesrv": "bin/mqnamesrv", "broker": "bin/mqbroker"}
APACHE_CONTROLLER_BIN = "bin/mqcontroller"
"""5.x only: a standalone controller (controller mode with `cluster.controllers: 3`)."""
EMULATOR_MODULE = {"namesrv": "emulator.namesrv", "broker": "emulator.broker", "controller": "emulator.controller_main"}
PATH_ENV = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
JVM_GC_LOG_DIR = "/dev/shm"
VERSION_JAR = re.compile(r"^rocketmq-broker-(\d+\.\d+\.\d+)\.jar$")


def distribution_version(home: Path) -> str | None:
    """The RocketMQ version of the distribution at `home`, from `lib/rocketmq-broker-<version>.jar` (None: no such
    jar, or several versions)."""
    try:
        names = os.listdir(home / "lib")
    except OSError:
        return None
    found = {m.group(1) for m in map(VERSION_JAR.match, names) if m}
    return found.pop() if len(found) == 1 else None


class ProgramError(RuntimeError):
    """The chosen broker program cannot be started here (one line, says what to set)."""


@dataclass(frozen=True)
class Program:
    kind: str  # "emulator" | "apache"
    home: Path | None = None

    @classmethod
    def choose(cls, kind: str, version: str | None = None) -> Program:
        """The program of `kind`; for `apache`, the distribution at `$ROCKETMQ_HOME`, which must be of `version`
        when one is given."""
        if kind == "emulator":
            return cls("emulator")
        home = os.environ.get(ROCKETMQ_HOME_ENV)
        if home and version is not None:
            home = home.replace("{version}", version)  # one setting for a matrix over versions
        if not home:
            raise ProgramError(f"cluster.program is apache but ${ROCKETMQ_HOME_ENV} is not set; set it to an "
                               "unpacked rocketmq-all-<version>-bin-release directory")
        for rel in APACHE_BIN.values():
            if not os.access(Path(home) / rel, os.X_OK):
                raise ProgramError(f"${ROCKETMQ_HOME_ENV}={home}: {rel} is missing or not executable")
        if version is not None:
            found = distribution_version(Path(home))
            if found is None:
                raise ProgramError(f"${ROCKETMQ_HOME_ENV}={home}: cannot tell the distribution's version (no single "
                                   "lib/rocketmq-broker-<version>.jar); allowed: a rocketmq-all-<version>-bin-release "
                                   "directory")
            if found != version:
                raise ProgramError(f"${ROCKETMQ_HOME_ENV}={home} is RocketMQ {found} but cluster.version is {version}; "
                                   f"allowed: a distribution of {version}, or cluster.version {found}")
        return cls("apache", Path(home))

    def argv(self, role: str, conf: Path) -> list[str]:
        """The command of a node of `role` (namesrv, controller, or a broker's role)."""
        kind = role if role in ("namesrv", "controller") else "broker"
        if self.kind == "emulator":
            return [sys.executable, "-m", EMULATOR_MODULE[kind], "-c", str(conf)]
        assert self.home is not None
        return [str(self.home / (APACHE_CONTROLLER_BIN if kind == "controller" else APACHE_BIN[kind])), "-c", str(conf)]

    def env(self, *, version: str, heap: str, node_dir: Path, log_dir: Path, bind: str = "127.0.0.1") -> dict[str, str]:
        """The node's environment; `bind`: the address the emulator listens on (its host's)."""
        env = {"PATH": os.environ.get("PATH", PATH_ENV), "HOME": str(node_dir), "LANG": "C.UTF-8",
               "ROCKETMQ_VERSION": version, "ROCKETMQ_LOG_DIR": str(log_dir)}
        if self.kind == "emulator":
            env.update({"HEAP_OPTS": heap, "RMQ_EMULATOR_BIND": bind,
                        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
        else:
            assert self.home is not None
            env.update({"ROCKETMQ_HOME": str(self.home), "JAVA_OPT_EXT": f"{heap} -Duser.home={node_dir}"})
            if os.environ.get("JAVA_HOME"):
                env["JAVA_HOME"] = os.environ["JAVA_HOME"]
        return env

    def log_dirs(self, node_dir: Path, log_dir: Path) -> list[Path]:
        return [log_dir] if self.kind == "emulator" else [node_dir / "logs" / "rocketmqlogs"]

    def gc_logs(self, pids: list[int]) -> list[Path]:
        """The JVM GC logs (with `-Xlog:...safepoint` where the distribution logs safepoints) that Apache's scripts
        write outside the node's directory, to `/dev/shm/rmq_{broker,srv}_gc_<pid>_<time>.log`; none for the
        emulator (its `gc.log` is in its log directory)."""
        if self.kind != "apache":
            return []
        return sorted(p for pid in pids for p in Path(JVM_GC_LOG_DIR).glob(f"rmq_*_gc_{pid}_*.log*"))
