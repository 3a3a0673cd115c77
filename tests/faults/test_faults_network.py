"""`partition` between namespace hosts (net_testbed.py): applied inside h1's namespace as the host agent would, the
cut measured from both sides with real TCP connections while h3 and the control node still reach h1, reverted with
nothing of ours left in h1's iptables and nothing changed in this machine's own namespace; after a crash of the
process that applied it, `cleanup` removes the chain, run inside h1 or from the control node's namespace, and says
so when h1's namespace is gone."""
from __future__ import annotations

import re

import pytest
from conftest import needs_root
from net_testbed import CONTROL, NetBed, machine_snapshot

from faults.cleanup import cleanup
from faults.journal import Journal
from faults.leftovers import scan_leftovers
from faults.net_probe import CUT
from faults.partition import Partition
from faults.target import NodeTarget, StaticPids

pytestmark = pytest.mark.root
PARTITION_N2 = {"kind": "partition", "params": {"peers": ["n2"]}, "id": "cut-n2"}


@pytest.fixture
def own_bed(base_dir, state_dir):
    needs_root()
    with NetBed(base_dir / "hosts", ("h1", "h2"), sinks=False) as bed:
        yield bed


def test_partition_cuts_h1_h2_both_ways_keeps_h3_and_the_control_node_then_reverts(net_bed, state_dir):
    machine_before = machine_snapshot()
    assert set(net_bed.connect("h1", ["h2", "h3", CONTROL]).values()) == {"connected"}
    ports_only = {"kind": "partition", "params": {"peers": "n3", "ports": [7001]}, "id": "cut-n3-7001"}
    driver = net_bed.driver("h1", state_dir, [PARTITION_N2, ports_only])

    applied = driver.results["cut-n2"]
    assert applied["verify"]["peers"]["n2"]["connect"] in CUT, applied
    assert applied["verify"]["kept"] == {f"{net_bed.control}:7000": "connected"}
    assert driver.results["cut-n3-7001"]["verify"]["peers"]["n3"]["connect"] in CUT
    from_h1 = net_bed.connect("h1", ["h2", "h3", CONTROL])
    assert from_h1["h2"] in CUT and from_h1["h3"] == from_h1[CONTROL] == "connected", from_h1
    assert net_bed.connect("h2", ["h1", "h3"]) == {"h1": "timeout", "h3": "connected"}
    assert net_bed.connect("h3", ["h1"]) == {"h1": "connected"}
    assert net_bed.connect(CONTROL, ["h1", "h2"]) == {"h1": "connected", "h2": "connected"}
    assert net_bed.connect("h1", ["h3"], port=7001)["h3"] in CUT  # only port 7001 of n3 is cut
    saved = net_bed.out("h1", ["iptables-save"])
    chain = applied["apply"]["chain"]
    assert re.fullmatch(r"RMQ-f-[0-9a-f]{12}", chain) and len(chain) <= 28
    assert f'-A INPUT -m comment --comment "rmq-chaos partition {driver.results["cut-n2"]["entry_id"]}" ' \
           f'-j {chain}' in saved
    assert f"-A {chain} -s {net_bed.control}/32 -j RETURN" in saved and f"-A {chain} -d {net_bed.addr('h2')}/32 -j DROP" in saved

    reverted = driver.revert()
    assert reverted["cut-n2"]["revert"]["undo"][0]["result"] == f"chain {chain} removed with 2 jump(s)"
    assert reverted["cut-n2"]["revert"]["connect_after"] == {"n2": "connected"}
    assert set(net_bed.connect("h1", ["h2", "h3", CONTROL]).values()) == {"connected"}
    assert net_bed.connect("h2", ["h1"]) == {"h1": "connected"}
    assert net_bed.connect("h1", ["h3"], port=7001)["h3"] == "ConnectionRefusedError"  # reached again: nobody listens
    assert "RMQ-" not in net_bed.out("h1", ["iptables-save"])
    assert not Journal(state_dir).open_entries()
    assert machine_snapshot() == machine_before  # this machine's own namespace: never touched


def _crash_after_apply(net_bed: NetBed, state_dir) -> str:
    driver = net_bed.driver("h1", state_dir, [PARTITION_N2])
    chain = driver.results["cut-n2"]["apply"]["chain"]
    driver.kill()  # SIGKILL after it journaled, applied and verified
    assert f":{chain} " in net_bed.out("h1", ["iptables-save"]) and net_bed.connect("h1", ["h2"])["h2"] in CUT
    return chain


def test_crash_after_apply_then_cleanup_inside_h1_removes_the_chain(net_bed, state_dir):
    chain = _crash_after_apply(net_bed, state_dir)
    report = net_bed.cleanup_in("h1", state_dir)
    assert report["ok"] and [r["kind"] for r in report["reverted"]] == ["fault:partition"], report
    assert report["reverted"][0]["undo"] == [{"op": "iptables_chain_remove",
                                              "result": f"chain {chain} removed with 2 jump(s)"}]
    assert "RMQ-" not in net_bed.out("h1", ["iptables-save"])
    assert net_bed.connect("h1", ["h2"]) == {"h2": "connected"} and net_bed.connect("h2", ["h1"]) == {"h1": "connected"}
    again = cleanup(state_dir)
    assert again.ok and not again.reverted


def test_cleanup_from_the_control_namespace_reaches_into_h1(net_bed, state_dir):
    """The undo op names h1's network namespace: replayed from another one it acts in h1's (nsenter), never here."""
    chain = _crash_after_apply(net_bed, state_dir)
    assert scan_leftovers(state_dir) == [f"iptables chain {chain} in net:[{_netns_of(net_bed, 'h1')}]"]
    report = cleanup(state_dir)
    assert report.ok and report.reverted[0]["undo"][0]["result"] == f"chain {chain} removed with 2 jump(s)"
    assert "RMQ-" not in net_bed.out("h1", ["iptables-save"]) and scan_leftovers(state_dir) == []


def test_cleanup_after_the_host_namespace_is_gone_says_so(own_bed, state_dir):
    _crash_after_apply(own_bed, state_dir)
    ns = _netns_of(own_bed, "h1")
    own_bed.close()
    report = cleanup(state_dir)
    assert report.ok and report.reverted[0]["undo"][0]["result"] == f"network namespace net:[{ns}] gone (its rules " \
                                                                    f"with it)"


def _netns_of(net_bed: NetBed, host: str) -> int:
    return int(net_bed.out(host, ["stat", "-L", "-c", "%i", "/proc/self/ns/net"]))


@pytest.mark.parametrize(("direction", "ports", "drops"), [
    ("in", None, [["-s", "10.9.0.2", "-j", "DROP"]]),
    ("out", None, [["-d", "10.9.0.2", "-j", "DROP"]]),
    ("both", [10911, 10912], [["-p", p, "-m", "multiport", "--ports", "10911,10912", f, "10.9.0.2", "-j", "DROP"]
                              for f in ("-s", "-d") for p in ("tcp", "udp")]),
])
def test_partition_rules_by_direction_and_ports_keep_the_control_node_first(tmp_path, direction, ports, drops):
    target = NodeTarget("n1", "master", "r", StaticPids([]), extras={"peers": {"n2": "10.9.0.2"}})
    fault = Partition(target, {"peers": ["n2", "n2"], "direction": direction, "ports": ports},
                      journal=Journal(tmp_path))
    fault.state.update(chain="RMQ-f-0", peers={"n2": "10.9.0.2"}, keep=["10.9.0.1"])
    assert fault.rules() == [["-s", "10.9.0.1", "-j", "RETURN"], ["-d", "10.9.0.1", "-j", "RETURN"], *drops]
