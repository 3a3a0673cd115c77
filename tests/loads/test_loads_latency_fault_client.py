"""A load client's `send_latency_fault_enable` reaches its producer's `MQFaultStrategy`, from the scenario file's
`load.clients[]` through the load spec (null: the profile's default, off in every version)."""
from __future__ import annotations

import pytest

from harness.scenario import Scenario, load_spec
from loads.producers import ProducerPool
from loads.spec import LoadSpec


def test_the_switch_goes_from_the_scenario_to_the_producer():
    scenario = Scenario.model_validate({"name": "lf", "load": {"clients": [
        {"name": "on", "users": 1, "profile": "java-5.3", "send_latency_fault_enable": True},
        {"name": "off", "users": 1, "send_latency_fault_enable": False},
        {"name": "default", "users": 1}]}, "phases": [{"name": "healthy", "duration": "1s"}]})
    spec = load_spec(scenario, "127.0.0.1:9876")
    assert [c.send_latency_fault_enable for c in spec.clients] == [True, False, None]
    pool = ProducerPool(spec)  # no connection is made before a send
    try:
        on, off, default = (pool.get(c) for c in spec.clients)
        assert (on.fault.enabled, on.fault.style, on.profile.send_latency_fault_enable) == (True, "5.3", True)
        assert (off.fault.enabled, off.fault.style) == (False, "4.9")
        assert default.fault.enabled is False and default.profile.send_latency_fault_enable is False
    finally:
        pool.shutdown()
    with pytest.raises(ValueError, match="send_latency_fault_enable"):
        LoadSpec.model_validate({"topic": "T", "namesrv": "127.0.0.1:9876", "clients": [
            {"name": "a", "users": 1, "send_latency_fault_enable": "sometimes"}]})
