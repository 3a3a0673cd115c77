"""Fault injectors for one node each: apply, verify by measurement, revert; journaled so a crash never leaves a
fault behind. The public API is re-exported here, loaded on first use (so the probe, hog and relay programs, which
are `faults` modules too, start without importing pydantic)."""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {  # module of this package: the names it exports here
    "registry": ("FAULTS", "fault_class"),
    "base": ("Fault", "FaultParams"),
    "journal": ("Journal", "Owner", "default_state_dir"),
    "cleanup": ("CleanupReport",),
    "target": ("NodeTarget", "NodeControl", "PidFile", "StaticPids"),
    "cluster_state": ("ClusterState", "write_cluster_state", "read_cluster_state"),
    "errors": ("FaultError", "FaultRefused", "FaultConflict", "FaultUnavailable", "FaultNotEffective", "UndoError"),
    "leftovers": ("scan_leftovers",),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    if name in _MODULE_OF:
        return getattr(importlib.import_module(f"faults.{_MODULE_OF[name]}"), name)
    raise AttributeError(f"module 'faults' has no attribute {name!r}")
