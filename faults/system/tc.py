"""tc for `net_bandwidth` and `net_delay`: a root htb qdisc of our own on the interface towards the peers (its handle
derived from the fault's tag), one class per peer with a u32 filter on the peer's address, an optional leaf qdisc
(netem) per class; traffic to anyone else is not classified and leaves unshaped (htb `default 0`). Removal deletes
the root qdisc only when it is still ours (same kind and handle); the kernel's default qdisc comes back by itself.
Whether the kernel has a qdisc kind is measured in a throwaway network namespace (`unshare --net`)."""
from __future__ import annotations

import functools
import json
import subprocess

from faults.system import netns
from faults.system.tools import have_tool, run_tool, tool_path

DEFAULT_HANDLE = "0:"
"""The handle of the kernel's own root qdisc (noqueue, pfifo_fast, fq_codel, mq...): nobody configured it."""
HANDLE_MIN, HANDLE_SPAN = 0x1000, 0x7000
"""Our root handles are in 1000:-7fff:, away from the kernel's automatic 8001:... ."""


def handle_for(tag: str) -> str:
    return f"{HANDLE_MIN + int(tag.rsplit('-', 1)[-1][-6:], 16) % HANDLE_SPAN:x}:"


def _tc(args: list[str], ns: int | None = None) -> subprocess.CompletedProcess | None:
    argv = netns.argv_in(ns, [tool_path("tc"), *args])
    return None if argv is None else run_tool(argv)


def route_dev(addr: str) -> str:
    """The interface this namespace sends packets for `addr` through."""
    proc = run_tool([tool_path("ip"), "-j", "route", "get", addr])
    return json.loads(proc.stdout)[0]["dev"]


def root_qdisc(dev: str, ns: int | None = None) -> dict | None:
    """The root qdisc of `dev` as `tc -j` gives it ({"kind", "handle", ...}); None when the namespace is gone."""
    proc = _tc(["-j", "qdisc", "show", "dev", dev, "root"], ns)
    if proc is None:
        return None
    roots = [q for q in json.loads(proc.stdout or "[]") if q.get("root")]
    return roots[0] if roots else {"kind": "none", "handle": DEFAULT_HANDLE}


def qdiscs(dev: str) -> list[dict]:
    return json.loads(_tc(["-j", "qdisc", "show", "dev", dev]).stdout or "[]")


@functools.cache
def kernel_has(kind: str, args: tuple[str, ...] = ()) -> bool:
    """Whether `tc qdisc add ... <kind> <args>` works here, tried on the loopback of a namespace made for it."""
    if not (have_tool("unshare") and have_tool("tc")):
        return False
    proc = subprocess.run([tool_path("unshare"), "--net", tool_path("tc"), "qdisc", "add", "dev", "lo", "root",
                           kind, *args], capture_output=True, text=True, check=False, timeout=10)
    return proc.returncode == 0


def add_peer_shaping(dev: str, handle: str, peers: list[str], rate_bits: int, leaf: list[str] | None) -> None:
    """Root htb `handle` on `dev`, a class of `rate_bits` per peer address (ceil the same), a u32 filter on the peer's
    address, and `leaf` (e.g. `["netem", "delay", "50ms"]`) as each class's qdisc."""
    major = handle.rstrip(":")
    _tc(["qdisc", "add", "dev", dev, "root", "handle", handle, "htb", "default", "0"])
    for i, addr in enumerate(peers):
        classid = f"{major}:{0x10 + i:x}"
        _tc(["class", "add", "dev", dev, "parent", handle, "classid", classid, "htb", "rate", f"{rate_bits}bit",
             "ceil", f"{rate_bits}bit"])
        if leaf:
            _tc(["qdisc", "add", "dev", dev, "parent", classid, *leaf])
        _tc(["filter", "add", "dev", dev, "parent", handle, "protocol", "ip", "prio", "1", "u32", "match", "ip",
             "dst", f"{addr}/32", "flowid", classid])


def _root_if_any(dev: str, ns: int | None) -> dict | None:
    """The root qdisc of `dev` in namespace `ns`; none when the device is gone; None when the namespace is."""
    return root_qdisc(dev, ns) if _dev_exists(dev, ns) else {"kind": "none", "handle": DEFAULT_HANDLE}


def is_ours(dev: str, handle: str, kind: str, ns: int | None) -> bool:
    root = _root_if_any(dev, ns)
    return root is not None and root.get("kind") == kind and root.get("handle") == handle


def remove_root(dev: str, handle: str, kind: str, ns: int | None) -> str:
    """Delete the root qdisc of `dev` in namespace `ns` if it is ours (`kind` with `handle`); idempotent."""
    root = _root_if_any(dev, ns)
    if root is None:
        return f"network namespace {netns.label(ns)} gone (its qdiscs with it)"
    if root.get("kind") != kind or root.get("handle") != handle:
        return f"root qdisc of {dev} is {root.get('kind')} {root.get('handle')}, not ours ({kind} {handle}): left alone"
    _tc(["qdisc", "del", "dev", dev, "root", "handle", handle], ns)
    return f"root qdisc {kind} {handle} of {dev} removed"


def _dev_exists(dev: str, ns: int | None) -> bool:
    argv = netns.argv_in(ns, [tool_path("ip"), "link", "show", "dev", dev])
    return argv is None or subprocess.run(argv, capture_output=True, check=False).returncode == 0
