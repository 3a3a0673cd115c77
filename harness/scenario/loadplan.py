"""The scenario's `load:` section as the load generator's `loads.spec.LoadSpec` (durations and sizes turned into
the milliseconds, seconds and bytes it takes; the phases with their rates; the warm-up as the initial phase)."""
from __future__ import annotations

from typing import Any

from harness.scenario.model import Scenario


def load_spec_data(scenario: Scenario, namesrv: str) -> dict[str, Any]:
    """The mapping `LoadSpec.model_validate` takes."""
    load = scenario.load
    clients = []
    for c in load.clients:
        item: dict[str, Any] = {"name": c.name, "model": load.model_of(c), "message_size": c.message_size,
                                "profile": c.profile, "send_timeout_ms": round(c.timeout * 1000)}
        for key in ("users", "max_users", "rate", "share", "retries", "tags", "instance", "send_latency_fault_enable",
                    "retry_another_broker_when_not_store_ok"):
            value = getattr(c, key)
            if value is not None:
                item[key] = value
        if c.serialize_type != "JSON":
            item["serialize_type"] = c.serialize_type
        if load.model_of(c) == "closed":
            item["think_time_s"] = c.think_time
        clients.append(item)
    data: dict[str, Any] = {
        "topic": scenario.topic.name, "namesrv": namesrv, "model": load.model, "clients": clients,
        "phases": [{"name": p.name, "duration_s": p.duration, **({"rate": p.rate} if p.rate is not None else {})}
                   for p in scenario.phases],
        "initial_phase": scenario.phases[0].name,
        "max_lag_s": load.max_lag,
    }
    if load.rate is not None:
        data["rate"] = load.rate
    return data


def load_spec(scenario: Scenario, namesrv: str) -> Any:
    from loads.spec import parse_spec
    return parse_spec(load_spec_data(scenario, namesrv), source=f"{scenario.name}: load")
