"""The load's Locust workers on load hosts (`load.hosts` of an `ssh` scenario): Locust's own distributed mode, the
master on the control node (listening on the address the hosts reach it at) and `load.workers` workers (at least
one) on each load host, started by that host's agent. `LoadProcess(remote=LoadHosts(...))` drives them like local
workers; after the stop, `fetch()` brings their rows (requests/, schedule/, logs/load/) into the run directory,
their times moved onto this machine's clock by the host's measured offset."""
from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

TIME_COLUMNS = {"requests": ("intended_ns", "start_ns", "end_ns"),
                "schedule": ("ts_ns", "first_intended_ns", "last_intended_ns")}


class LoadHosts:
    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.hosts = list(backend.scenario.load.hosts)
        self.per_host = max(1, backend.scenario.load.workers)
        self.count = len(self.hosts) * self.per_host
        self.listen_host = backend.control_addr
        self.run_dirs: dict[str, str] = {}
        self.stopping = False

    def start(self, spec_json: str, master_host: str, master_port: int, run_id: str) -> None:
        for host in self.hosts:
            got = self.backend.agents[host].call("load_workers", spec=spec_json, master_host=master_host,
                                                 master_port=master_port, run_id=run_id, count=self.per_host)
            self.run_dirs[host] = got["run_dir"]

    def lost(self) -> list[str]:
        """One line per worker that ended before the load's stop."""
        if self.stopping:
            return []
        out = []
        for host in self.hosts:
            try:
                workers = self.backend.agents[host].call("load_status", timeout_s=10)["workers"]
            except Exception as err:  # noqa: BLE001 - a host that does not answer has lost its workers
                out.append(f"load host {host}: {err}")
                continue
            out += [f"load worker {w['pid']} on host {host} ended ({_exit(w['code'])})" for w in workers
                    if w["code"] is not None]
        return out

    def fetch(self, run_dir: Path) -> int:
        """Every load host's rows into `run_dir`, on this machine's clock; returns the part files fetched."""
        self.stopping = True
        fetched = 0
        for host in self.hosts:
            agent = self.backend.agents[host]
            agent.call("load_end", timeout_s=120)
            ssh = self.backend.ssh[host]
            src = self.run_dirs.get(host)
            if src is None:
                continue
            proc = ssh.run(["sh", "-c", f"cd {src} && tar -cf - $(ls -d requests schedule logs/load 2>/dev/null)"],
                           input=b"", timeout=600, check=False)
            offset = self.backend.offsets.get(host, {}).get("offset_start_ns", 0)
            with tempfile.TemporaryDirectory() as tmp, tarfile.open(fileobj=io.BytesIO(proc.stdout), mode="r|") as tar:
                tar.extractall(tmp, filter="data")
                fetched += _move_shifted(Path(tmp), run_dir, offset, host)
        return fetched


def _move_shifted(src: Path, run_dir: Path, offset_ns: int, host: str) -> int:
    n = 0
    for sub, columns in TIME_COLUMNS.items():
        for part in sorted((src / sub).glob("part-*.parquet")):
            table = pq.read_table(part)
            for col in columns:
                i = table.schema.get_field_index(col)
                table = table.set_column(i, col, pc.subtract(table.column(col), pa.scalar(offset_ns, pa.int64())))
            dest = run_dir / sub / part.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, dest.with_name(f".{part.name}.tmp"), compression="zstd")
            dest.with_name(f".{part.name}.tmp").replace(dest)
            n += 1
    for log in (src / "logs" / "load").glob("*.log"):
        dest = run_dir / "logs" / "load" / f"{host}-{log.name}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(log.read_bytes())
    return n


def _exit(code: int) -> str:
    return f"killed by signal {-code}" if code < 0 else f"exit {code}"

