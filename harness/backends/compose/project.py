"""A compose project of one run: `docker compose config` (the files and their variables are valid), `up -d --wait`
(every service healthy, in dependency order; only `services` when given: with several broker groups the groups
file's members, not the checked-in file's `master` and `slave`), its containers by service (Docker SDK), `down -v`.
The checked-in file comes first, `extra_files` after it (harness/backends/compose/groups.py). Journaled before `up`
with the undo `compose_down`, so `rmq-chaos cleanup` removes the containers of a run that died."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faults.docker import engine
from faults.docker.ops import PROJECT_LABEL
from faults.errors import ToolError
from faults.journal import Journal
from faults.undo import undo_entry

KIND = "resource:compose_project"
SERVICE_LABEL = "com.docker.compose.service"
STOP_TIMEOUT_S = 10


@dataclass
class ComposeProject:
    name: str
    file: Path
    env: dict[str, str]
    env_file: Path
    log_path: Path
    extra_files: tuple[Path, ...] = ()
    services: tuple[str, ...] = ()
    """what `up` starts (with their dependencies); empty: every service of the files"""
    entry_id: str = ""
    journal: Journal | None = field(default=None, repr=False)

    def _base(self) -> list[str]:
        files = [a for f in (self.file, *self.extra_files) for a in ("-f", str(f))]
        return ["-p", self.name, *files, "--env-file", str(self.env_file)]

    def _log(self, args: list[str], proc: Any) -> None:
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(f"$ docker compose {' '.join(args)}\n{proc.stdout}{proc.stderr}\n")

    def config(self) -> str:
        """`docker compose config`: the file with this run's variables, resolved (raises on an invalid one)."""
        args = [*self._base(), "config"]
        proc = engine.run_compose(args, env=self.env, timeout_s=60)
        self._log(args, proc)
        return proc.stdout

    def up(self, journal: Journal, run_id: str, wait_timeout_s: float, start: bool = True) -> None:
        """Journal the project, then `up -d --wait` (nothing is pulled or built); `start` False: `up --no-start`,
        the containers made but not started (controller mode starts them in its own order)."""
        undo = [{"op": "compose_down", "project": self.name, "timeout_s": STOP_TIMEOUT_S}]
        self.journal = journal
        self.entry_id = journal.begin(KIND, undo=undo, run_id=run_id, target="cluster",
                                      data={"project": self.name, "file": str(self.file),
                                            "extra_files": [str(f) for f in self.extra_files],
                                            "env_file": str(self.env_file)})
        how = ["-d", "--wait", "--wait-timeout", str(max(1, int(wait_timeout_s)))] if start else ["--no-start"]
        args = [*self._base(), "up", *how, "--pull", "never", "--no-build", *self.services]
        proc = engine.run_compose(args, env=self.env, timeout_s=wait_timeout_s + 60, check=False)
        self._log(args, proc)
        if proc.returncode != 0:
            tail = " | ".join(line.strip() for line in (proc.stderr or proc.stdout).strip().splitlines()[-3:])
            raise ToolError(f"docker compose up of {self.name} exited {proc.returncode}: {tail} (log: {self.log_path})")

    def containers(self) -> dict[str, Any]:
        """The project's containers by service name."""
        found = engine.client().containers.list(all=True, filters={"label": f"{PROJECT_LABEL}={self.name}"})
        return {c.labels.get(SERVICE_LABEL, c.name): c for c in found}

    def down(self) -> list[dict]:
        """`down -v` and a sweep of anything left with the project's label; idempotent."""
        if not self.entry_id or self.journal is None:
            return []
        return undo_entry(self.journal, self.entry_id) or []
