"""iptables (IPv4 filter table) for `partition`: a chain of our own (`RMQ-<tag>`), jumped to from INPUT and OUTPUT by
rules that carry a comment naming the fault, removed whole (jumps deleted, chain flushed and deleted). Nothing here
touches a chain whose name does not start with `RMQ-`, or a rule that is not one of our jumps. Every call names the
network namespace it acts in (`faults.system.netns`; None: this process's). On Debian 12 `iptables` is iptables-nft."""
from __future__ import annotations

import subprocess

from faults.errors import FaultRefused
from faults.system import netns
from faults.system.tools import run_tool, tool_path

IPTABLES = "iptables"
OUR_PREFIX = "RMQ-"
MAX_CHAIN = 28
"""iptables refuses longer chain names (XT_EXTENSION_MAXNAMELEN - 1)."""
HOOKS = ("INPUT", "OUTPUT")
WAIT = ("-w", "5")
"""Wait up to 5 s for the xtables lock (iptables-legacy) instead of failing when another iptables runs."""


def chain_name(tag: str) -> str:
    name = OUR_PREFIX + tag
    if len(name) > MAX_CHAIN:
        raise FaultRefused(f"iptables chain name {name!r} is longer than {MAX_CHAIN} characters")
    return name


def jump_rule(chain: str, comment: str) -> list[str]:
    """The rule spec (after `-A HOOK`) of our jump to `chain`."""
    return ["-m", "comment", "--comment", comment, "-j", chain]


def _argv(args: list[str], ns: int | None) -> list[str] | None:
    return netns.argv_in(ns, [tool_path(IPTABLES), *WAIT, *args])


def _run(args: list[str], ns: int | None, ok_codes: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess | None:
    argv = _argv(args, ns)
    return None if argv is None else run_tool(argv, ok_codes=ok_codes)


def chain_rules(chain: str, ns: int | None = None) -> list[str] | None:
    """`iptables -S chain` lines, or None when the chain (or the namespace) does not exist."""
    proc = _run(["-S", chain], ns, ok_codes=(0, 1))
    if proc is None or proc.returncode != 0:
        return None
    return proc.stdout.splitlines()


def our_chains(ns: int | None = None) -> list[str]:
    """Chains named `RMQ-...` in the filter table."""
    proc = _run(["-S"], ns)
    lines = proc.stdout.splitlines() if proc else []
    return [x.split()[1] for x in lines if x.startswith(f"-N {OUR_PREFIX}")]


def jumps_to(chain: str, ns: int | None = None) -> list[str]:
    """Rules of INPUT and OUTPUT that jump to `chain` (ours or not), as `iptables -S` prints them."""
    found = []
    for hook in HOOKS:
        proc = _run(["-S", hook], ns)
        found += [x for x in (proc.stdout.splitlines() if proc else []) if x.split()[-2:] == ["-j", chain]]
    return found


def create_chain(chain: str, rules: list[list[str]], jumps: list[dict]) -> None:
    """Make `chain` in this namespace with `rules` (each a spec after `-A chain`), then insert the jumps first in
    their hooks: the chain is complete before any packet reaches it."""
    _check_ours(chain, jumps)
    _run(["-N", chain], None)
    for rule in rules:
        _run(["-A", chain, *rule], None)
    for j in jumps:
        _run(["-I", j["hook"], "1", *j["rule"]], None)


def remove_chain(chain: str, jumps: list[dict], ns: int | None) -> str:
    """Delete our jumps, flush and delete our chain, in namespace `ns`; idempotent. Refuses anything not ours."""
    _check_ours(chain, jumps)
    if _argv([], ns) is None:
        return f"network namespace {netns.label(ns)} gone (its rules with it)"
    removed = 0
    for j in jumps:
        while _run(["-C", j["hook"], *j["rule"]], ns, ok_codes=(0, 1, 2)).returncode == 0:
            _run(["-D", j["hook"], *j["rule"]], ns)
            removed += 1
    if chain_rules(chain, ns) is None:
        return f"chain {chain} already gone; {removed} jump(s) removed"
    _run(["-F", chain], ns)
    _run(["-X", chain], ns)
    return f"chain {chain} removed with {removed} jump(s)"


def _check_ours(chain: str, jumps: list[dict]) -> None:
    if not chain.startswith(OUR_PREFIX) or len(chain) > MAX_CHAIN:
        raise FaultRefused(f"iptables chain {chain!r} is not one of ours (ours: {OUR_PREFIX}<tag>)")
    for j in jumps:
        if j.get("hook") not in HOOKS or list(j.get("rule", []))[-2:] != ["-j", chain]:
            raise FaultRefused(f"iptables: {j} is not a jump of ours to {chain}")
