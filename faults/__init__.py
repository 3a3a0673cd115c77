"""Fault injectors for one node each: apply, verify by measurement, revert; journaled so a crash never leaves a
fault behind. The public API is re-exported here, loaded on first use (so the probe, hog and relay programs, which
are `faults` modules too, start without importing pydantic)."""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "FAULTS": "faults.registry", "fault_class": "faults.registry", "Fault": "faults.base",
    "FaultParams": "faults.base", "Journal": "faults.journal", "Owner": "faults.journal",
    "default_state_dir": "faults.journal", "CleanupReport": "faults.cleanup",
    "NodeTarget": "faults.target", "NodeControl": "faults.target", "PidFile": "faults.target",
    "StaticPids": "faults.target", "ClusterState": "faults.cluster_state",
    "write_cluster_state": "faults.cluster_state", "read_cluster_state": "faults.cluster_state",
    "FaultError": "faults.errors", "FaultRefused": "faults.errors", "FaultConflict": "faults.errors",
    "FaultUnavailable": "faults.errors", "FaultNotEffective": "faults.errors", "UndoError": "faults.errors",
    "scan_leftovers": "faults.leftovers",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'faults' has no attribute {name!r}")
