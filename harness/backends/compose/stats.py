"""Per-container figures of the compose backend's metrics rows, from the Docker stats API: one stream per container
(a frame per second, read by a thread), turned into the row's `cpu_percent` (Docker's formula: share of the
machine's CPU time x online CPUs x 100, i.e. percent of one CPU, as psutil's), `rss_bytes` and `swap_bytes` (the
memory cgroup's rss and swap), and read/write bytes per second. This engine reports no block I/O in its stats on
kernels where the blkio scheduler statistics are empty (seen here: cgroup v1, no CFQ/BFQ on the device), so the I/O
figures then come from the container's own `blkio.throttle.io_service_bytes_recursive`, the file Docker would read.
The broker figures and the collector's schedule are the local backend's (`harness.collectors.metrics`)."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from harness.collectors.metrics import MetricsCollector, MetricsNode, RuntimeFetch

STALE_S = 3.0
RETRY_S = 1.0
THROTTLE_FILE = "blkio.throttle.io_service_bytes_recursive"
NO_FIGURES: dict[str, Any] = {"cpu_percent": None, "rss_bytes": None, "swap_bytes": None, "read_bytes_per_s": None,
                              "write_bytes_per_s": None}


class DockerStatsSampler:
    """The latest stats frame of one container, and figures since the previous `sample()`."""

    def __init__(self, container_id: str, blkio_cgroup: str | None = None) -> None:
        self.container_id = container_id
        self.blkio_cgroup = blkio_cgroup
        self._frame: dict[str, Any] | None = None
        self._frame_at = 0.0
        self._io: tuple[float, int, int] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, name=f"rmq-stats-{container_id[:12]}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()  # the stream ends when the container is removed; the thread is a daemon

    def _follow(self) -> None:
        from faults.docker import engine

        while not self._stop.is_set():
            try:
                for frame in engine.client().api.stats(self.container_id, stream=True, decode=True):
                    self._frame, self._frame_at = frame, time.monotonic()
                    if self._stop.is_set():
                        return
            except Exception:  # noqa: BLE001 - container stopped or engine busy: retry until stopped
                pass
            self._stop.wait(RETRY_S)

    def sample(self) -> dict[str, Any]:
        frame = self._frame
        if frame is None or time.monotonic() - self._frame_at > STALE_S or not frame.get("pids_stats", {}).get(
                "current"):
            return dict(NO_FIGURES)
        out = {"cpu_percent": cpu_percent(frame)}
        stats = frame.get("memory_stats", {}).get("stats", {})
        out["rss_bytes"] = stats.get("total_rss", stats.get("rss", stats.get("anon")))
        out["swap_bytes"] = stats.get("total_swap", stats.get("swap"))
        read, write = io_bytes(frame)
        if read is None and self.blkio_cgroup:
            read, write = throttle_io_bytes(self.blkio_cgroup)
        now = time.monotonic()
        out["read_bytes_per_s"] = out["write_bytes_per_s"] = None
        if read is not None and write is not None:
            if self._io is not None and now > self._io[0]:
                dt = now - self._io[0]
                out["read_bytes_per_s"] = max(0, read - self._io[1]) / dt
                out["write_bytes_per_s"] = max(0, write - self._io[2]) / dt
            self._io = (now, read, write)
        return out


def cpu_percent(frame: dict[str, Any]) -> float | None:
    cpu, pre = frame.get("cpu_stats", {}), frame.get("precpu_stats", {})
    try:
        used = cpu["cpu_usage"]["total_usage"] - pre["cpu_usage"]["total_usage"]
        system = cpu["system_cpu_usage"] - pre["system_cpu_usage"]
    except (KeyError, TypeError):
        return None
    cpus = cpu.get("online_cpus") or len(cpu.get("cpu_usage", {}).get("percpu_usage") or []) or 1
    return used / system * cpus * 100.0 if system > 0 and used >= 0 else None


def io_bytes(frame: dict[str, Any]) -> tuple[int | None, int | None]:
    entries = (frame.get("blkio_stats") or {}).get("io_service_bytes_recursive") or []
    if not entries:
        return None, None
    read = sum(e["value"] for e in entries if str(e.get("op", "")).lower() == "read")
    write = sum(e["value"] for e in entries if str(e.get("op", "")).lower() == "write")
    return read, write


def throttle_io_bytes(cgroup: str) -> tuple[int | None, int | None]:
    try:
        lines = Path(os.path.join(cgroup, THROTTLE_FILE)).read_text(encoding="ascii").splitlines()
    except OSError:
        return None, None
    totals = {"Read": 0, "Write": 0}
    for line in lines:
        parts = line.split()
        if len(parts) == 3 and parts[1] in totals:
            totals[parts[1]] += int(parts[2])
    return totals["Read"], totals["Write"]


class ComposeMetricsCollector(MetricsCollector):
    """The local collector with Docker stats samplers instead of psutil's process samplers."""

    def __init__(self, run_id: str, metrics_dir: str | Path, nodes: list[MetricsNode], fetch: RuntimeFetch,
                 containers: dict[str, tuple[str, str | None]]) -> None:
        super().__init__(run_id, metrics_dir, nodes, fetch)
        self.samplers = {n.name: DockerStatsSampler(*containers[n.name]) for n in nodes}  # type: ignore[assignment]

    def start(self) -> None:
        for s in self.samplers.values():
            s.start()
        super().start()

    def stop(self) -> None:
        super().stop()
        for s in self.samplers.values():
            s.stop()
