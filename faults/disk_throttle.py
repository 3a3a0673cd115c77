"""`disk_throttle`: bandwidth / IOPS limits on the node's store device for the node's processes (cgroup v1
`blkio.throttle.*`, cgroup v2 `io.max`). Verify: a direct-I/O probe inside the node's cgroup keeps the cgroup's
throttle queue full while the cgroup's own counters for the device are sampled; the cgroup's rate (probe plus whatever
the node itself writes meanwhile) must be within 20 % of the limit. The probe's share of it is reported beside it.
cgroup v1 does not throttle buffered writeback done by the kernel flusher (see docs/faults.md)."""
from __future__ import annotations

import os

from pydantic import Field, model_validator

from faults import guard
from faults.base import FaultParams
from faults.errors import FaultNotEffective, FaultRefused
from faults.probe import dio_probe, probe_path
from faults.store_fault import StoreFault
from faults.system import cgroupfs, mounts

TOLERANCE = 0.20
"""A measured rate within ±20 % of the limit counts as the limit in effect."""
PROBE_SECONDS = 0.6
MAX_PROBE_SECONDS = 8.0
"""The probe runs on past PROBE_SECONDS, up to this, while the node's own large writes make the cgroup's counter jump
by more than a fifth of what the window has counted (a throttle dispatches a 1.25 MiB bio of the node at once)."""
UNTHROTTLED_PROBE_SECONDS = 0.3
V1_FILES = {"write_bps": "blkio.throttle.write_bps_device", "read_bps": "blkio.throttle.read_bps_device",
            "write_iops": "blkio.throttle.write_iops_device", "read_iops": "blkio.throttle.read_iops_device"}
V2_KEYS = {"write_bps": "wbps", "read_bps": "rbps", "write_iops": "wiops", "read_iops": "riops"}
IOPS_CHUNK = 4096


class DiskThrottleParams(FaultParams):
    write_bps: int | None = Field(None, ge=4096, description="write bandwidth limit, bytes/s")
    read_bps: int | None = Field(None, ge=4096, description="read bandwidth limit, bytes/s")
    write_iops: int | None = Field(None, ge=1, description="write operations/s limit")
    read_iops: int | None = Field(None, ge=1, description="read operations/s limit")

    @model_validator(mode="after")
    def _one_limit(self) -> DiskThrottleParams:
        if not any(getattr(self, k) for k in V1_FILES):
            raise ValueError(f"give at least one of {', '.join(V1_FILES)}")
        return self


def _chunk_for(bps: int) -> int:
    """About 40 writes per second of limit, in whole 4 KiB blocks (direct I/O alignment), 4 KiB..1 MiB."""
    return max(4096, min(1 << 20, (bps // 40) // 4096 * 4096))


class DiskThrottle(StoreFault):
    kind = "disk_throttle"
    summary = "bandwidth/IOPS limit on the store device for the node's cgroup (blkio v1 / io.max v2); revert: lift"
    Params = DiskThrottleParams
    VERIFY_TIMEOUT_S = 3.0

    @classmethod
    def problems(cls) -> list[str]:
        controller = [] if cgroupfs.hierarchy("blkio") else ["no blkio (v1) / io (v2) cgroup controller"]
        return super().problems() + controller

    def check(self) -> None:
        super().check()
        key = "blkio" if "blkio" in self.target.cgroups else "io"
        self.state["cgroup"] = guard.check_cgroup(self.kind, self.target, key)
        self.state["version"] = cgroupfs.version_of(self.state["cgroup"])
        dev = self.target.store_device or self.store.source
        if not dev.startswith("/dev/"):
            raise FaultRefused(f"{self.kind}: store of {self.target.name} is on {dev}, not a block device")
        self.state["device"], self.state["majmin"] = dev, mounts.device_number(dev)

    @property
    def limits(self) -> dict[str, int]:
        return {k: getattr(self.params, k) for k in V1_FILES if getattr(self.params, k)}

    def claims(self) -> list[str]:
        return [f"blkio:{self.state['cgroup']}:{self.state['majmin']}"]

    def _probe_files(self) -> dict[str, str]:
        return {m: probe_path(self.mount, f"{self.tag}.{m}") for m in ("write", "read")}

    def plan(self) -> list[dict]:
        cg, mm = self.state["cgroup"], self.state["majmin"]
        if self.state["version"] == 1:
            ops = []
            for key in self.limits:
                old = _v1_current(cg, V1_FILES[key], mm)
                ops.append({"op": "cgroup_write", "path": cg, "knob": V1_FILES[key], "value": f"{mm} {old}"})
        else:
            old = _v2_current(cg, mm)
            ops = [{"op": "cgroup_write", "path": cg, "knob": "io.max",
                    "value": f"{mm} " + " ".join(f"{V2_KEYS[k]}={old.get(V2_KEYS[k], 'max')}" for k in V2_KEYS)}]
        ops.append({"op": "kill_procs", "tag": self.tag, "timeout_s": 5.0})
        ops += [{"op": "rm", "path": p} for p in self._probe_files().values()]
        return ops

    def inject(self) -> dict:
        cg, mm = self.state["cgroup"], self.state["majmin"]
        if "read_bps" in self.limits or "read_iops" in self.limits:
            self._make_read_file()
        if self.state["version"] == 1:
            for key, value in self.limits.items():
                cgroupfs.write(cg, V1_FILES[key], f"{mm} {value}")
        else:
            cgroupfs.write(cg, "io.max", f"{mm} " + " ".join(f"{V2_KEYS[k]}={v}" for k, v in self.limits.items()))
        return {"cgroup": cg, "device": self.state["device"], "majmin": mm, "limits": self.limits}

    def _make_read_file(self) -> None:
        size = 1 << 20
        for key, value in self.limits.items():
            if key == "read_bps":
                size = max(size, int(value * PROBE_SECONDS * 1.5))
            elif key == "read_iops":
                size = max(size, value * IOPS_CHUNK * 2)
        size = min(size, 256 << 20) // 4096 * 4096
        path = self._probe_files()["read"]
        with open(path, "wb") as f:
            block = os.urandom(1 << 20)
            for _ in range(0, size, len(block)):
                f.write(block)
            f.flush()
            os.fsync(f.fileno())

    def _probe(self, key: str, seconds: float, unlimited: bool = False) -> dict:
        value = self.limits[key]
        mode = "write" if key.startswith("write") else "read"
        chunk = IOPS_CHUNK if key.endswith("iops") else _chunk_for(value)
        window = seconds if unlimited else MAX_PROBE_SECONDS
        max_bytes = int(value * (chunk if key.endswith("iops") else 1) * window * 2) if not unlimited else 256 << 20
        free = os.statvfs(self.mount).f_bavail * os.statvfs(self.mount).f_frsize
        max_bytes = max(chunk, min(max_bytes, free // 4) // chunk * chunk)
        path = self._probe_files()[mode]
        cg = self.state["cgroup"]
        try:
            result = dio_probe(path, self.tag, [cg], mode=mode, chunk=chunk, seconds=seconds, max_bytes=max_bytes,
                               stat_cgroup=cg, stat_device=self.state["majmin"],
                               stat_figure="ops" if key.endswith("iops") else "bytes",
                               max_seconds=None if unlimited else MAX_PROBE_SECONDS)
        finally:
            if mode == "write" and os.path.exists(path):
                os.unlink(path)
        figure = "iops" if key.endswith("iops") else "rate_bps"
        own, total = result[figure], result["cgroup"][figure]
        return {"limit": value, "measured": total, "ratio": round(total / value, 3), "probe_measured": own,
                "probe_share": round(own / total, 3) if total > 0 else None, "probe": result}

    def measure(self) -> tuple[bool, dict]:
        """The cgroup's rate on the device while the probe keeps its queue full, against each limit."""
        evidence = {k: self._probe(k, PROBE_SECONDS) for k in self.limits}
        ok = all(abs(e["ratio"] - 1.0) <= TOLERANCE for e in evidence.values())
        return ok, evidence

    def shortfall(self, evidence: dict) -> tuple[str, str]:
        unit = {"bps": "B/s", "iops": "IO/s"}
        measured = "; ".join(f"{k} of the cgroup {e['measured']} {unit[k.split('_')[1]]} ({e['ratio']}x; probe "
                             f"{e['probe_measured']})" for k, e in evidence.items() if isinstance(e, dict))
        bound = ", ".join(f"{k} {v} ±{TOLERANCE:.0%}" for k, v in self.limits.items())
        return measured, bound

    def measure_gone(self) -> dict:
        evidence = {}
        for key in self.limits:
            if key.startswith("read"):
                continue  # the read file is gone with the revert; the knob read-back below covers reads
            e = self._probe(key, UNTHROTTLED_PROBE_SECONDS, unlimited=True)
            evidence[key] = e
            if e["probe_measured"] < (1.0 + TOLERANCE) * e["limit"]:  # the probe alone goes past the old limit
                raise FaultNotEffective(f"{self.kind}: {key} still near the limit after revert: {e}", evidence)
        evidence["knobs_after"] = _knobs(self.state["cgroup"], self.state["majmin"], self.state["version"])
        return evidence


def _v1_current(cg: str, knob: str, majmin: str) -> int:
    for line in cgroupfs.read(cg, knob).splitlines():
        dev, _, value = line.partition(" ")
        if dev == majmin:
            return int(value)
    return 0


def _v2_current(cg: str, majmin: str) -> dict[str, str]:
    for line in cgroupfs.read(cg, "io.max").splitlines():
        parts = line.split()
        if parts and parts[0] == majmin:
            return dict(p.split("=", 1) for p in parts[1:])
    return {}


def _knobs(cg: str, majmin: str, version: int) -> dict:
    if not os.path.isdir(cg):
        return {}
    if version == 1:
        return {k: _v1_current(cg, f, majmin) for k, f in V1_FILES.items()}
    return _v2_current(cg, majmin)
