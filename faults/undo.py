"""Undo operations as data: each is a JSON dict `{"op": name, ...}` that can be replayed by any process, without the
objects that made the change, and is idempotent (doing it twice, or after the change never happened, is harmless).
Faults and node resources journal them before they act; revert and `cleanup` run them with `run_ops`."""
from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Callable
from dataclasses import dataclass, field

from faults.busy import BUSY_TIMEOUT_S, umount_when_free
from faults.docker.ops import DOCKER_OPS
from faults.errors import UndoError
from faults.journal import Journal
from faults.system import cgroupfs, iptables, mounts, swapfiles, tc
from faults.system.procs import ProcId, tagged, terminate, with_descendants
from faults.target import NodeControl, build_from_factory, pid_source_from_json

StepHook = Callable[[str, str, dict | None, str | None], None]
"""on_step(step, status, evidence, error) -- status: started | ok | failed."""
NODE_TIMEOUT_S = 120.0


@dataclass
class UndoContext:
    """What replay may use: node controls by node name (absent in `cleanup`: a dead run's nodes are not restarted)."""

    controls: dict[str, NodeControl] = field(default_factory=dict)
    on_step: StepHook | None = None
    own_tags: frozenset[str] = frozenset()
    """Journal ids of the run whose ops are replayed: a process carrying one as its tag is the run's own."""
    own_procs: tuple[ProcId, ...] = ()
    """Processes (pid and start time) the run's journal recorded."""


def _procs(op: dict) -> list[ProcId]:
    found = {p.pid: p for p in (ProcId.from_json(x) for x in op.get("procs", [])) if p.exists()}
    if op.get("tag"):
        found.update({p.pid: p for p in tagged(op["tag"])})
    return list(found.values())


def op_signal(op: dict, ctx: UndoContext) -> str:
    sig = signal.Signals[op["signal"]]
    sent = sum(p.signal(sig) for p in _procs(op))
    return f"{sig.name} to {sent} process(es)" if sent else "no process left"


def op_kill_procs(op: dict, ctx: UndoContext) -> str:
    procs = _procs(op)
    if not procs:
        return "no process left"
    dying = terminate(procs, float(op.get("timeout_s", 5.0)))
    note = f"; {len(dying)} still dying (blocked in D state)" if dying else ""
    return f"ended {len(procs)} process(es){note}"


def _device(op: dict) -> str | None:
    """The loop device of op["image"]; the recorded device only for ops that name no image. Once the image is
    detached (its cluster was taken down) the number it had may belong to another run's store: never touch it."""
    if op.get("image"):
        devs = mounts.loop_devices_for(op["image"])
        return devs[0] if devs else None
    return op.get("device")


def _mounted_ours(op: dict) -> mounts.Mount | None:
    """The mount at op["mount"] if its source is a loop device backed by op["image"] (never anyone else's)."""
    m = mounts.mount_at(op["mount"])
    if m is None:
        return None
    if op.get("image") and mounts.loop_backing_file(m.source) not in (os.path.realpath(op["image"]),
                                                                      os.path.realpath(op["image"]) + " (deleted)"):
        return None
    return m


def op_thaw(op: dict, ctx: UndoContext) -> str:
    if _mounted_ours(op) is None:
        return "not mounted"
    return "thawed" if mounts.thaw(op["mount"]) else "was not frozen"


def op_umount(op: dict, ctx: UndoContext) -> str:
    """A busy store is retried while the run's own holders are ended and gone (`faults.busy`), bounded."""
    if _mounted_ours(op) is None:
        return "not mounted"
    return umount_when_free(op["mount"], ctx.own_tags, ctx.own_procs,
                            float(op.get("busy_timeout_s", BUSY_TIMEOUT_S)))


def op_e2fsck(op: dict, ctx: UndoContext) -> str:
    dev = _device(op)
    if dev is None:
        return "no device"
    if any(m.source == dev for m in mounts.mounts()):
        raise UndoError(f"e2fsck {dev}: still mounted")
    rc, last = mounts.e2fsck(dev)
    return f"exit {rc}: {last}"


def op_mount(op: dict, ctx: UndoContext) -> str:
    if _mounted_ours(op) is not None:
        return "already mounted"
    dev = _device(op)
    if dev is None:
        return "no device"
    os.makedirs(op["mount"], exist_ok=True)
    mounts.mount(dev, op["mount"], op.get("fstype", "ext4"), op.get("options", ""))
    return f"mounted {dev}"


def op_loop_detach(op: dict, ctx: UndoContext) -> str:
    devs = mounts.loop_devices_for(op["image"])
    for dev in devs:
        mounts.loop_detach(dev)
    return f"detached {', '.join(devs)}" if devs else "not attached"


def _remove(path: str, remove: Callable[[str], None]) -> str:
    try:
        remove(path)
        return "removed"
    except FileNotFoundError:
        return "already gone"


def op_rm(op: dict, ctx: UndoContext) -> str:
    return _remove(op["path"], os.unlink)


def op_rmdir(op: dict, ctx: UndoContext) -> str:
    return _remove(op["path"], shutil.rmtree if op.get("recursive") else os.rmdir)


def op_swapoff(op: dict, ctx: UndoContext) -> str:
    return swapfiles.remove_swap_file(op["path"])


def op_cgroup_write(op: dict, ctx: UndoContext) -> str:
    if not os.path.isdir(op["path"]):
        return "cgroup gone"
    cgroupfs.write(op["path"], op["knob"], op["value"])
    return f"{op['knob']} = {op['value']}"


def op_cgroup_remove(op: dict, ctx: UndoContext) -> str:
    return cgroupfs.remove(op["path"])


def op_relay_mode(op: dict, ctx: UndoContext) -> str:
    from faults.relay_client import RelayClient

    if not os.path.exists(op["control"]):
        return "relay gone"
    try:
        RelayClient(op["control"]).set_mode(op.get("mode", "pass"))
    except (ConnectionRefusedError, FileNotFoundError):
        return "relay gone"
    return f"relay mode {op.get('mode', 'pass')}"


def op_node_stop(op: dict, ctx: UndoContext) -> str:
    control = ctx.controls.get(op["node"])
    if control is not None:
        control.stop()
        return "stopped by its control"
    pids = pid_source_from_json(op["pids"])() if op.get("pids") else []
    procs = with_descendants(pids)
    if not procs:
        return "not running"
    dying = terminate(procs, float(op.get("timeout_s", 10.0)))
    if dying:
        raise UndoError(f"node {op['node']}: pids {[p.pid for p in dying]} do not end (D state)")
    return f"ended {len(procs)} process(es)"


def op_node_start(op: dict, ctx: UndoContext) -> str:
    control = ctx.controls.get(op["node"])
    if control is None:
        return "skipped: no control (the run that owned the node is gone)"
    control.start()
    timeout = float(op.get("timeout_s", NODE_TIMEOUT_S))
    if op.get("wait") == "caught_up":
        control.wait_caught_up(timeout)
        return "started, caught up"
    control.wait_ready(timeout)
    return "started, ready"


def op_consumer_release(op: dict, ctx: UndoContext) -> str:
    """Consumer processes' listeners, rebuilt from the JSON naming their factory (`faults.consumer_stuck`'s
    `ConsumerListeners`): no message blocks any more, the blocked threads return."""
    return f"released {build_from_factory(op['listeners'], None).release()} consumer(s)"


def op_iptables_chain_remove(op: dict, ctx: UndoContext) -> str:
    """Our jumps deleted, our `RMQ-` chain flushed and deleted, in the network namespace the op names."""
    return iptables.remove_chain(op["chain"], op["jumps"], op.get("netns"))


def op_tc_qdisc_remove(op: dict, ctx: UndoContext) -> str:
    """The root qdisc of op["dev"] deleted if it is still ours (kind and handle), in the op's network namespace."""
    return tc.remove_root(op["dev"], op["handle"], op["kind"], op.get("netns"))


OPS: dict[str, Callable[[dict, UndoContext], str]] = {
    "signal": op_signal, "kill_procs": op_kill_procs, "thaw": op_thaw, "umount": op_umount, "e2fsck": op_e2fsck,
    "mount": op_mount, "loop_detach": op_loop_detach, "rm": op_rm, "rmdir": op_rmdir, "swapoff": op_swapoff,
    "cgroup_write": op_cgroup_write, "cgroup_remove": op_cgroup_remove, "relay_mode": op_relay_mode,
    "node_stop": op_node_stop, "node_start": op_node_start, "consumer_release": op_consumer_release,
    "iptables_chain_remove": op_iptables_chain_remove, "tc_qdisc_remove": op_tc_qdisc_remove,
}


OPS.update(DOCKER_OPS)


def run_ops(ops: list[dict], ctx: UndoContext | None = None) -> list[dict]:
    """Run `ops` in order; stop at the first failure with `UndoError` (later ops depend on earlier ones)."""
    ctx = ctx or UndoContext()
    results: list[dict] = []
    for op in ops:
        fn = OPS.get(op.get("op", ""))
        step = op.get("step")
        if fn is None:
            raise UndoError(f"unknown undo op {op.get('op')!r} (known: {', '.join(OPS)})", results)
        if step and ctx.on_step:
            ctx.on_step(step, "started", None, None)
        try:
            outcome = fn(op, ctx)
        except Exception as e:  # noqa: BLE001 -- any failure ends the replay with what ran so far
            if step and ctx.on_step:
                ctx.on_step(step, "failed", None, str(e))
            results.append({"op": op["op"], "error": str(e)})
            raise UndoError(f"undo {op['op']} failed: {e}", results) from e
        results.append({"op": op["op"], "result": outcome})
        if step and ctx.on_step:
            ctx.on_step(step, "ok", {"result": outcome}, None)
    return results


def undo_entry(journal: Journal, entry_id: str, how: str = "destroyed") -> list[dict] | None:
    """Replay the undo of the open journal entry `entry_id` and mark it done with `how` (what a journaled resource's
    `destroy` does). None when the entry is unknown or done already, so a second call is harmless; an `UndoError`
    leaves the entry open for `cleanup`."""
    entry = journal.get(entry_id)
    if entry is None or entry.done:
        return None
    results = run_ops(entry.undo)
    journal.done(entry_id, how)
    return results
