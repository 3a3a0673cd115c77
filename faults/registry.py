"""`FAULTS`: every fault class by its `kind` (the name scenario files and the CLI use)."""
from __future__ import annotations

from faults.base import Fault
from faults.consumer_stuck import ConsumerStuck
from faults.disk_freeze import DiskFreeze
from faults.disk_throttle import DiskThrottle
from faults.errors import FaultRefused
from faults.ha_link import HaLink
from faults.memory_pressure import MemoryPressure
from faults.net_bandwidth import NetBandwidth
from faults.net_delay import NetDelay
from faults.node_restart import NodeRestart
from faults.partition import Partition
from faults.process_freeze import ProcessFreeze
from faults.process_kill import ProcessKill
from faults.readonly_fs import ReadonlyFs

FAULTS: dict[str, type[Fault]] = {cls.kind: cls for cls in (
    ReadonlyFs, DiskFreeze, DiskThrottle, MemoryPressure, ProcessFreeze, ProcessKill, NodeRestart, HaLink,
    ConsumerStuck, Partition, NetBandwidth, NetDelay)}


def fault_class(kind: str) -> type[Fault]:
    try:
        return FAULTS[kind]
    except KeyError:
        raise FaultRefused(f"fault kind {kind!r} unknown (allowed: {', '.join(FAULTS)})") from None
