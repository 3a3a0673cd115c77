"""Send load with Locust: RocketMQ producer users, open and closed load models, per-request Parquet records.

The harness uses `LoadSpec` and `LoadProcess` (which run Locust in child processes); importing this package never
imports Locust or gevent, whose monkey-patching must stay out of the harness process. People use
`locust -f loads/locustfile.py`.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["ClientSpec", "ConsumerError", "ConsumerFleet", "GroupSpec", "LoadError", "LoadProcess", "LoadSpec",
           "LoadStats", "PhaseSpec", "SpecError", "StuckSpec", "load_spec", "parse_group", "parse_groups", "parse_spec",
           "spec_from_env", "write_control"]

_HOME = {"ClientSpec": "loads.spec", "LoadSpec": "loads.spec", "PhaseSpec": "loads.spec", "SpecError": "loads.spec",
         "load_spec": "loads.spec", "parse_spec": "loads.spec", "spec_from_env": "loads.spec",
         "LoadProcess": "loads.process", "LoadError": "loads.process", "LoadStats": "loads.tally",
         "GroupSpec": "loads.consumer_spec", "StuckSpec": "loads.consumer_spec", "parse_group": "loads.consumer_spec",
         "parse_groups": "loads.consumer_spec", "ConsumerFleet": "loads.consumers", "ConsumerError": "loads.consumers",
         "write_control": "loads.consumer_control"}


def __getattr__(name: str) -> Any:
    """Lazy re-exports: `python -m loads.headless` must be able to import Locust (and patch) before anything."""
    if name in _HOME:
        return getattr(import_module(_HOME[name]), name)
    raise AttributeError(f"module 'loads' has no attribute {name!r}")
