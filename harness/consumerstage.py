"""The consumers of a run (scenario `consumers:`), in the runner's flow: started after the cluster is ready and
before the load, drained after the load, stopped before the read-back (and in the wind-down of any run).

- `start()`: a journal entry (`resource:consumers`, undo: end every process carrying its tag) is written first and
  its tag is in the environment of every consumer process (`RMQ_CHAOS_TAG`), so `rmq-chaos cleanup` ends the
  consumers of a crashed runner; then `loads.consumers.ConsumerFleet.start`, then a wait until the master lists
  each group's consumers (GET_CONSUMER_LIST_BY_GROUP count == consumers) and GET_CONSUME_STATS lists every queue
  of the topic for the group (an offset was committed for it); event `consumers_start`. The lag collector starts.
- `targets`: each process as a `NodeTarget` (role `consumer`, name `<group>.c<i>`, pids of the live process, a
  control whose start() restarts it through the fleet) and each group as `consumer:<group>` (every process), so
  `kill` / `freeze` / `consumer_stuck` act on consumers.
- `drain()`: poll each group's lag until it is 0 for every group or `consumers.drain` passes; event
  `consumers_drain` (per-group lag at the end, `drained`).
- `stop()`: `fleet.stop()`, event `consumers_stop` (rows per group); idempotent. `close()`: the lag collector's
  last rows, the journal entry closed.
"""
from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from faults.system.procs import TAG_ENV, ProcId
from faults.target import NodeTarget
from harness.collectors.consumer_lag import ConsumerLagCollector, broker_stats_fetch, lag_of

KIND = "resource:consumers"
START_TIMEOUT_S = 60.0
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
POLL_S = 0.5
LIST_TIMEOUT_MS = 1000
_env_lock = threading.Lock()


def consumer_count(addr: str, group: str, timeout_ms: float = LIST_TIMEOUT_MS) -> int:
    """GET_CONSUMER_LIST_BY_GROUP: how many client ids the broker lists for `group` (0 when it answers "no consumer
    for this group" or does not answer)."""
    from harness import brokerclient
    from remoting.codes import RequestCode, ResponseCode
    from remoting.command import make_request

    admin = brokerclient.admin()
    p = admin.profile
    request = make_request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group}, b"",
                           version=p.version, language=p.language, serialize_type=p.serialize_type)
    try:
        response = admin.client.invoke_sync(addr, request, timeout_ms)
    except Exception:  # noqa: BLE001 - not answering counts as not listed yet
        return 0
    if response.code != ResponseCode.SUCCESS or not response.body:
        return 0
    return len(json.loads(response.body.decode("utf-8")).get("consumerIdList") or [])


class ConsumerControl:
    """A consumer process (or every process of a group) as a node control for `kill`'s restart and `restart`."""

    def __init__(self, stage: ConsumerStage, group: str, index: int | None) -> None:
        self.stage, self.group, self.index = stage, group, index

    def stop(self) -> None:
        for worker in self.stage.workers_of(self.group, self.index):
            if self.stage.alive(worker):
                self.stage.fleet.kill(worker, 15)

    def start(self) -> None:
        for worker in self.stage.workers_of(self.group, self.index):
            if not self.stage.alive(worker):
                with _env_lock:
                    self.stage.fleet.restart(worker)
        self.stage.note_procs()
        self.stage.refresh_targets()

    def wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        group = self.stage.group(self.group)
        while time.monotonic() < deadline:
            if consumer_count(self.stage.master_addr, self.group) >= group.consumers:
                return
            time.sleep(POLL_S)
        raise TimeoutError(f"consumers of {self.group}: not all listed by the master within {timeout_s:.0f} s")

    def wait_caught_up(self, timeout_s: float) -> None:
        self.wait_ready(timeout_s)


class ConsumerStage:
    def __init__(self, scenario: Any, rd: Any, backend: Any, journal: Any, say: Any = None) -> None:
        self.scenario = scenario
        self.section = scenario.consumers
        self.rd = rd
        self.journal = journal
        self.say = say or (lambda *_: None)
        self.namesrv = backend.namesrv_addr
        self.master_addr = backend.broker_addrs["master"]
        self.addrs = [backend.broker_addrs["master"], backend.broker_addrs["slave"]]
        self.fleet: Any = None
        self.tag = journal.new_id("p")
        self.lag: ConsumerLagCollector | None = None
        self.stopped = False
        self.closed = False
        self.targets: dict[str, NodeTarget] = {}

    # --- workers ----------------------------------------------------------------------------------------------
    def group(self, name: str) -> Any:
        return self.section.group(name)

    def workers_of(self, group: str, index: int | None) -> list[str]:
        """The current worker name of each process of `group` (one when `index` is given): a restarted process is
        `<group>.c<i>.r<n>`, the newest one counts."""
        newest: dict[int, tuple[int, str]] = {}
        for name, h in self.fleet.workers.items():
            if h.group != group or (index is not None and h.index != index):
                continue
            gen = int(name.rsplit(".r", 1)[1]) if ".r" in name.split(".c", 1)[-1] else 0
            if h.index not in newest or gen > newest[h.index][0]:
                newest[h.index] = (gen, name)
        return [newest[i][1] for i in sorted(newest)]

    def alive(self, worker: str) -> bool:
        p = ProcId.of(self.fleet.workers[worker].pid)
        return p is not None and p.alive()

    def pids_of(self, group: str, index: int | None) -> list[int]:
        return [self.fleet.workers[w].pid for w in self.workers_of(group, index) if self.alive(w)]

    def control_files(self, group: str, index: int | None) -> list[str]:
        return [str(_control_path(self.fleet.workers[w])) for w in self.workers_of(group, index)]

    def note_procs(self) -> None:
        """Record the live processes in the journal entry (cleanup also finds them by their tag)."""
        procs = [p.to_json() for p in (ProcId.of(h.pid) for h in self.fleet.workers.values()) if p]
        self.journal.update(self.tag, undo=[{"op": "kill_procs", "tag": self.tag, "procs": procs, "timeout_s": 10}])

    # --- the flow ---------------------------------------------------------------------------------------------
    def start(self) -> dict[str, Any]:
        from loads.consumers import ConsumerFleet

        run_id = self.rd.run_id
        self.journal.begin(KIND, undo=[{"op": "kill_procs", "tag": self.tag, "timeout_s": 10}], run_id=run_id,
                           target="consumers", entry_id=self.tag, data={"groups": [g.name for g in self.section.groups]})
        os.environ[TAG_ENV] = self.tag  # inherited by the consumer processes (and their restarts)
        self.fleet = ConsumerFleet(list(self.section.groups), self.namesrv, self.scenario.topic.name, self.rd.root,
                                   run_id)
        self.fleet.start(START_TIMEOUT_S)
        self.note_procs()
        self._build_targets()
        waited = self._wait_listed()
        self.lag = ConsumerLagCollector(run_id, self.rd.layout.consumer_lag, [g.name for g in self.section.groups],
                                        broker_stats_fetch(self.addrs))
        self.lag.start()
        event = {"groups": {g.name: g.consumers for g in self.section.groups}, "workers": sorted(self.fleet.workers),
                 "pids": {w: h.pid for w, h in self.fleet.workers.items()}, **waited}
        self.rd.event("consumers_start", **event)
        return event

    def refresh_targets(self) -> None:
        """A restarted process may have a new control file: the targets name the current ones."""
        for t in self.targets.values():
            index = None if t.name.startswith("consumer:") else int(t.name.rsplit(".c", 1)[1])
            t.extras["control_files"] = self.control_files(t.extras["group"], index)

    def _build_targets(self) -> None:
        run_id = self.rd.run_id
        for g in self.section.groups:
            for i in range(g.consumers):
                name = f"{g.name}.c{i}"
                self.targets[name] = NodeTarget(
                    name=name, role="consumer", run_id=run_id, pids=lambda g=g.name, i=i: self.pids_of(g, i),
                    control=ConsumerControl(self, g.name, i),
                    extras={"group": g.name, "control_files": self.control_files(g.name, i)})
            self.targets[f"consumer:{g.name}"] = NodeTarget(
                name=f"consumer:{g.name}", role="consumer", run_id=run_id,
                pids=lambda g=g.name: self.pids_of(g, None), control=ConsumerControl(self, g.name, None),
                extras={"group": g.name, "control_files": self.control_files(g.name, None)})

    def _wait_listed(self) -> dict[str, Any]:
        """Until the master lists every group's consumers and GET_CONSUME_STATS lists every queue of the topic."""
        t0 = time.monotonic()
        deadline = t0 + READY_TIMEOUT_S
        fetch = broker_stats_fetch([self.master_addr])
        topic, queues = self.scenario.topic.name, self.scenario.topic.queues
        listed: dict[str, int] = {}
        owned: dict[str, int] = {}
        while True:
            for g in self.section.groups:
                listed[g.name] = consumer_count(self.master_addr, g.name)
                rows = fetch(g.name) or []
                owned[g.name] = len({r["queue_id"] for r in rows if r["topic"] == topic})
            ready = all(listed[g.name] == g.consumers and owned[g.name] >= queues for g in self.section.groups)
            if ready:
                return {"listed": listed, "queues_owned": owned, "ready_s": round(time.monotonic() - t0, 3)}
            if time.monotonic() >= deadline:
                raise TimeoutError(f"consumers not ready within {READY_TIMEOUT_S:.0f} s: listed by the master "
                                   f"{listed}, queues with a committed offset {owned} (want {queues} each)")
            time.sleep(POLL_S)

    def drain(self) -> dict[str, Any]:
        t0 = time.monotonic()
        deadline = t0 + self.section.drain
        fetch = broker_stats_fetch(self.addrs)
        lags: dict[str, int | None] = {}
        while True:
            lags = {g.name: lag_of(fetch(g.name)) for g in self.section.groups}
            drained = all(v == 0 for v in lags.values())
            if drained or time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)
        event = {"lag": lags, "drained": drained, "waited_s": round(time.monotonic() - t0, 3)}
        self.rd.event("consumers_drain", **event)
        self.say(f"consumers: {'drained' if drained else 'not drained'} after {event['waited_s']:.0f} s; lag "
                 + ", ".join(f"{g} {v}" for g, v in lags.items()), "" if drained else "yellow")
        return event

    def stop(self) -> dict[str, Any] | None:
        if self.stopped or self.fleet is None:
            return None
        self.stopped = True
        rows = self.fleet.stop(STOP_TIMEOUT_S)
        self.rd.event("consumers_stop", rows=rows)
        return rows

    def close(self) -> None:
        """After `stop`: the lag collector's last rows; the journal entry closed (any process left is ended)."""
        if self.closed:
            return
        self.closed = True
        if os.environ.get(TAG_ENV) == self.tag:
            del os.environ[TAG_ENV]
        try:
            if self.lag is not None:
                self.lag.stop()
        finally:
            entry = self.journal.get(self.tag)
            if entry is not None and not entry.done:
                from faults.undo import run_ops

                run_ops(entry.undo)  # whatever still carries the tag (the load, stopped before, carries it too)
                self.journal.done(self.tag, "stopped")

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per group: consumed/s (the broker's consume TPS) and lag, from the lag collector's last answer."""
        if self.lag is None:
            return {}
        out = {}
        for g in self.section.groups:
            rows = self.lag.latest.get(g.name)
            out[g.name] = {"tps": rows[0]["consume_tps"] if rows else None, "lag": lag_of(rows)}
        return out


def _control_path(handle: Any) -> str:
    for attr in ("control_path", "control"):
        value = getattr(handle, attr, None)
        if value:
            return str(value)
    raise AttributeError(f"consumer handle {handle!r} has no control file path")
