"""`net_bandwidth` and `net_delay` between namespace hosts (net_testbed.py), and the refusals of all three network
faults: the rate from h1 to h2 measured by h2's sink within ±20 % of the limit while h1 to h3 is not shaped, and no
qdisc of ours after revert; `net_delay` refused in one line on a kernel without netem; bad params, unknown or kept
peers, a missing probe and a root qdisc someone else configured refused in one line, with h1's iptables rules and
qdiscs identical before and after and nothing journaled."""
from __future__ import annotations

import pytest

from faults.journal import Journal
from faults.net_delay import NetDelay, netem_available
from faults.registry import FAULTS

pytestmark = pytest.mark.root
LIMIT = 1 << 20
TOLERANCE = 0.20


def test_net_bandwidth_limits_h1_to_h2_measured_by_the_sink_and_reverts(net_bed, state_dir):
    before = net_bed.snapshot("h1")
    fault = {"kind": "net_bandwidth", "params": {"peers": ["n2"], "rate_bps": LIMIT}, "id": "slow-n2"}
    driver = net_bed.driver("h1", state_dir, [fault])
    result = driver.results["slow-n2"]
    peer = result["verify"]["peers"]["n2"]
    assert abs(peer["class_ratio"] - 1) <= TOLERANCE and peer["shaping"], result
    assert peer["class"] == result["apply"]["classes"]["n2"] and peer["counters"]["overlimits"] > 0, result
    assert abs(peer["probe_ratio"] - 1) <= TOLERANCE, result  # an idle link: the probe alone fills the class
    handle = result["apply"]["handle"]
    assert result["apply"]["dev"] == "eth0" and f"qdisc htb {handle} dev eth0 root" in net_bed.out("h1", ["tc", "qdisc"])
    measured = net_bed.rate("h1", "h2")
    assert abs(measured["rate_bps"] / LIMIT - 1) <= TOLERANCE, measured  # the test's own transfer, same limit
    assert net_bed.rate("h1", "h3", 0.4)["rate_bps"] > 5 * LIMIT  # n3 is not shaped
    assert net_bed.rate("h2", "h1", 0.4)["rate_bps"] > 5 * LIMIT  # nor the way back (direction out)

    reverted = driver.revert()["slow-n2"]["revert"]
    assert reverted["undo"] == [{"op": "tc_qdisc_remove", "result": f"root qdisc htb {handle} of eth0 removed"}]
    assert reverted["root_qdisc_after"] == "noqueue 0:" and reverted["probes_after"]["n2"]["ratio"] > 5
    assert net_bed.snapshot("h1") == before  # no qdisc of ours left
    assert net_bed.rate("h1", "h2", 0.4)["rate_bps"] > 5 * LIMIT


@pytest.mark.skipif(netem_available(), reason="this kernel has netem: the refusal cannot be shown here")
def test_net_delay_is_refused_in_one_line_without_netem(net_bed, state_dir):
    assert "no netem qdisc in this kernel" in NetDelay.problems()
    before = net_bed.snapshot("h1")
    fault = {"kind": "net_delay", "params": {"peers": ["n2"], "delay_ms": 50}, "id": "late-n2"}
    out = net_bed.driver("h1", state_dir, [fault], hold=False).results["late-n2"]
    assert out["error"] == "FaultUnavailable" and "\n" not in out["message"]
    assert out["message"] == "net_delay: this kernel has no netem qdisc (tc: Specified qdisc kind is unknown); " \
                             "nothing was changed"
    assert net_bed.snapshot("h1") == before and not Journal(state_dir).entries()


@pytest.mark.skipif(not netem_available(), reason="no netem in this kernel (the code path is untested here)")
def test_net_delay_with_netem_delays_connects_to_h2_and_reverts(net_bed, state_dir):
    before = net_bed.snapshot("h1")
    fault = {"kind": "net_delay", "params": {"peers": ["n2"], "delay_ms": 80}, "id": "late-n2"}
    driver = net_bed.driver("h1", state_dir, [fault])
    assert min(driver.results["late-n2"]["verify"]["connect_ms"]["n2"]) >= 64
    driver.revert()
    assert net_bed.snapshot("h1") == before


REFUSALS = [
    ("partition", {"peers": ["n9"]}, "partition: unknown peer 'n9' (allowed: ctl, n2, n3, n4, all)"),
    ("partition", {"peers": ["ctl"]}, "partition: peer ctl is at {ctl}, a kept address (the control node's or this "
                                      "host's own): never cut or shaped"),
    ("partition", {"peers": ["n4"]}, "partition: no probe port for peer n4 (extras.probe_ports) and no params.ports: "
                                     "the cut could not be measured"),
    ("partition", {"peers": ["n2"], "direction": "sideways"}, "partition: params.direction: Input should be 'both', "
                                                              "'in' or 'out' (allowed keys: peers, direction, ports)"),
    ("partition", {"peers": ["n2"], "ports": [0]}, "partition: params.ports: Value error, port 0 is not in 1..65535 "
                                                   "(allowed keys: peers, direction, ports)"),
    ("partition", {"peers": ["n2"], "peer": "n3"}, "partition: params.peer: Extra inputs are not permitted (allowed keys: peers, "
                                    "direction, ports)"),
    ("net_bandwidth", {"peers": ["n2"], "rate_bps": 10}, "net_bandwidth: params.rate_bps: Input should be greater than "
                                                         "or equal to 65536 (allowed keys: peers, rate_bps, direction)"),
    ("net_bandwidth", {"peers": ["n2"], "rate_bps": LIMIT, "direction": "in"}, "net_bandwidth: params.direction: "
                                                                               "Input should be 'out'"),
    ("net_bandwidth", {"peers": ["n3"], "rate_bps": LIMIT}, "net_bandwidth: none of the peers n3 has a probe sink "
                                                            "(extras.sinks: {peer: \"addr:port\"}): the rate could not "
                                                            "be measured"),
    ("net_bandwidth", {"peers": "n2,n9", "rate_bps": LIMIT}, "net_bandwidth: unknown peer 'n9' (allowed: ctl, n2, n3, "
                                                             "n4, all)"),
]


def test_bad_params_unknown_peers_and_missing_probes_are_refused_in_one_line_changing_nothing(net_bed, state_dir):
    target = net_bed.target("h1")
    x = target["extras"]
    x["peers"] = {"n2": net_bed.addr("h2"), "n3": net_bed.addr("h3"), "n4": "10.254.254.254", "ctl": net_bed.control}
    del x["sinks"]["n3"]  # n4 has neither a sink nor a probe port
    cases = [{"kind": k, "params": p, "id": f"bad-{i}"} for i, (k, p, _) in enumerate(REFUSALS)]
    before = net_bed.snapshot("h1")
    results = net_bed.driver("h1", state_dir, cases, target=target, hold=False).results
    for i, (_, _, message) in enumerate(REFUSALS):
        out = results[f"bad-{i}"]
        assert out["error"] == "FaultRefused" and "\n" not in out["message"], out
        assert out["message"].startswith(message.replace("{ctl}", net_bed.control)), out
    assert net_bed.snapshot("h1") == before and not Journal(state_dir).entries()


def test_a_root_qdisc_someone_else_configured_is_refused_and_left_alone(net_bed, state_dir):
    net_bed.out("h1", ["tc", "qdisc", "add", "dev", "eth0", "root", "handle", "77:", "tbf", "rate", "1mbit", "burst",
                   "10kb", "latency", "50ms"])
    try:
        before = net_bed.snapshot("h1")
        fault = {"kind": "net_bandwidth", "params": {"peers": ["n2"], "rate_bps": LIMIT}, "id": "slow-n2"}
        out = net_bed.driver("h1", state_dir, [fault], hold=False).results["slow-n2"]
        assert out["error"] == "FaultRefused"
        assert out["message"] == "net_bandwidth: interface eth0 already has a root qdisc tbf 77: that rmq-chaos did " \
                                 "not make; refusing to replace it"
        assert net_bed.snapshot("h1") == before and not Journal(state_dir).entries()
    finally:
        net_bed.out("h1", ["tc", "qdisc", "del", "dev", "eth0", "root", "handle", "77:"])


def test_problems_name_a_missing_iptables_or_tc(monkeypatch):
    import faults.net_shaping
    import faults.partition

    monkeypatch.setattr(faults.partition, "have_tool", lambda name: False)
    monkeypatch.setattr(faults.net_shaping, "have_tool", lambda name: name != "tc")
    assert "no iptables (Debian: iptables)" in FAULTS["partition"].problems()
    assert "no tc (Debian: iproute2)" in FAULTS["net_bandwidth"].problems()
    assert {"partition", "net_bandwidth", "net_delay"} <= set(FAULTS)
    assert all(FAULTS[k].NEEDS_ROOT and FAULTS[k].target_roles == ("namesrv", "master", "slave")
               for k in ("partition", "net_bandwidth", "net_delay"))
