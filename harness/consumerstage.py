"""The consumers of a run (scenario `consumers:`), in the runner's flow: started after the cluster is ready and
before the load, drained after the load, stopped before the read-back (and in the wind-down of any run).

- `start()`: a journal entry (`resource:consumers`, undo: end every process carrying its tag) is written first and
  its tag is in the environment of every consumer process (`RMQ_CHAOS_TAG`), so `rmq-chaos cleanup` ends the
  consumers of a crashed runner; then `loads.consumers.ConsumerFleet.start`, then a wait until the master lists
  each group's consumers (GET_CONSUMER_LIST_BY_GROUP count == consumers) and GET_CONSUME_STATS shows an offset
  of the group committed on the topic (see `_wait_listed`); event `consumers_start`. The lag collector starts.
- `targets`: each process as a `NodeTarget` (role `consumer`, name `<group>.c<i>`, pids of the live process, a
  control whose start() restarts it through the fleet) and each group as `consumer:<group>` (every process), so
  `kill` / `freeze` / `consumer_stuck` act on consumers; `extras["listeners"]` is the JSON of the processes' control
  files (`loads.consumer_control.ControlFiles`, rebuilt from its factory), what `consumer_stuck` acts on.
- `drain()`: poll each group's lag until it is 0 for every group or `consumers.drain` passes; event
  `consumers_drain` (per-group lag at the end, `drained`).
- `stop()`: `fleet.stop()`, event `consumers_stop` (rows per group); idempotent. `close()`: the lag collector's
  last rows, the journal entry closed.
- `judge_phase(...)`: at each phase's end, a group that must keep up (`keep_up`) whose clients held pulls back
  (flow control) in a phase without a fault on the group: event `consumers_behind`, a yellow line.
- `watch(on_lost, intended)`: a thread that notices within `WATCH_S` a consumer process that ended on its own (the
  OOM killer, a SIGKILL not from a fault, its records could not be written) and reports it once (`on_lost(error,
  t_ns)`); a process a fault of the run acts on (`intended(worker)`) is the scenario's business, not a loss.
"""
from __future__ import annotations

import json
import os
import signal
import threading
import time
from typing import Any

from faults.system.procs import TAG_ENV, ProcId
from faults.target import NodeTarget
from harness.collectors.consumer_lag import ConsumerLagCollector, broker_stats_fetch, lag_of
from harness.scenario import GROUP_TARGET_PREFIX
from harness.scenario.consumers import target_group

KIND = "resource:consumers"
START_TIMEOUT_S = 60.0
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
POLL_S = 0.5
LIST_TIMEOUT_MS = 1000
WATCH_S = 0.2


def _ask(addr: str, code: int, fields: dict[str, str], timeout_ms: float) -> Any | None:
    """One admin request over the harness's shared client; None when the broker does not answer."""
    from harness import brokerclient
    from remoting.command import make_request

    admin = brokerclient.admin()
    p = admin.profile
    request = make_request(code, fields, b"", version=p.version, language=p.language, serialize_type=p.serialize_type)
    try:
        return admin.client.invoke_sync(addr, request, timeout_ms)
    except Exception:  # noqa: BLE001 - not answering counts as not listed / not committed yet
        return None


def consumer_count(addr: str, group: str, timeout_ms: float = LIST_TIMEOUT_MS) -> int:
    """GET_CONSUMER_LIST_BY_GROUP: how many client ids the broker lists for `group` (0 when it answers "no consumer
    for this group" or does not answer)."""
    from remoting.codes import RequestCode, ResponseCode

    response = _ask(addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group}, timeout_ms)
    if response is None or response.code != ResponseCode.SUCCESS or not response.body:
        return 0
    return len(json.loads(response.body.decode("utf-8")).get("consumerIdList") or [])


def _last_words(log_path: Any) -> str:
    """`: <the last line of its log>; see <log>` (or just where the log is)."""
    try:
        lines = [ln for ln in open(log_path, encoding="utf-8", errors="replace").read().splitlines()[-20:] if ln]
    except OSError:
        lines = []
    return (f": {lines[-1][:300]}" if lines else "") + f"; see {log_path}"


class GroupControl:
    """Every process of a group as one node control (`consumer:<group>`): stop ends each live one, start restarts
    each that is down (through the fleet), wait_ready waits until the master lists the group's consumers."""

    def __init__(self, stage: ConsumerStage, group: str) -> None:
        self.stage, self.group = stage, group

    def stop(self) -> None:
        for w in self.stage.fleet.select(self.group):
            if w.alive:
                self.stage.fleet.kill(w.name, signal.SIGTERM)

    def start(self) -> None:
        for w in self.stage.fleet.select(self.group):
            if not w.alive:
                self.stage.fleet.restart(w.name)
        self.stage.note_procs()

    def wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        want = self.stage.section.group(self.group).consumers
        while consumer_count(self.stage.master_addr, self.group) < want:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"consumers of {self.group}: not all listed by the master within {timeout_s:.0f} s")
            time.sleep(POLL_S)

    def wait_caught_up(self, timeout_s: float) -> None:
        self.wait_ready(timeout_s)


class WorkerControl:
    """One consumer process as a node control: the fleet's own (`ConsumerFleet.control`), its restarts noted in
    the journal entry."""

    def __init__(self, stage: ConsumerStage, worker: str) -> None:
        self.stage, self.inner = stage, stage.fleet.control(worker)

    def stop(self) -> None:
        self.inner.stop()

    def start(self) -> None:
        self.inner.start()
        self.stage.note_procs()

    def wait_ready(self, timeout_s: float) -> None:
        self.inner.wait_ready(timeout_s)

    def wait_caught_up(self, timeout_s: float) -> None:
        self.inner.wait_caught_up(timeout_s)


class ConsumerStage:
    def __init__(self, scenario: Any, rd: Any, backend: Any, journal: Any, say: Any = None) -> None:
        self.scenario = scenario
        self.section = scenario.consumers
        self.rd = rd
        self.journal = journal
        self.say = say or (lambda *_: None)
        self.namesrv = backend.namesrv_addr
        self.addrs = backend.role_addrs  # asked each time: in controller mode the master changes
        self.group_addrs = getattr(backend, "group_addrs", None) or (lambda: [self.addrs()])
        """Per broker group, its brokers (master first): each answers GET_CONSUME_STATS for its own queues."""
        self.fleet: Any = None
        self.tag = journal.new_id("p")
        self.lag: ConsumerLagCollector | None = None
        self.stopped = False
        self.closed = False
        self.targets: dict[str, NodeTarget] = {}
        self._watching = threading.Event()
        self._on_lost: Any = None

    @property
    def master_addr(self) -> str:
        """The broker that holds the master role now."""
        return self.addrs()[0]

    # --- workers ---------------------------------------------------------------------------------------------
    def note_procs(self) -> None:
        """Record the live processes in the journal entry (cleanup also finds them by their tag)."""
        procs = [p.to_json() for p in (ProcId.of(w.pid) for w in self.fleet.history if w.alive) if p]
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
                                        broker_stats_fetch(self.group_addrs))
        self.lag.on_failure = lambda error: self._on_lost and self._on_lost(error, time.time_ns())
        self.lag.start()
        event = {"groups": {g.name: g.consumers for g in self.section.groups}, "workers": sorted(self.fleet.workers),
                 "pids": {w: h.pid for w, h in self.fleet.workers.items()}, **waited}
        self.rd.event("consumers_start", **event)
        return event

    def _build_targets(self) -> None:
        run_id = self.rd.run_id
        for g in self.section.groups:
            workers = [g.worker(i) for i in range(g.consumers)]
            names = [(w, w) for w in workers] + [(f"{GROUP_TARGET_PREFIX}{g.name}", g.name)]
            for name, selector in names:
                control = GroupControl(self, g.name) if selector == g.name else WorkerControl(self, selector)
                listeners = self.fleet.listeners(selector).to_json()
                self.targets[name] = NodeTarget(
                    name=name, role="consumer", run_id=run_id, pids=lambda s=selector: self.fleet.pids(s),
                    control=control, extras={"group": g.name, "listeners": listeners})

    def _wait_listed(self) -> dict[str, Any]:
        """Until the master lists every group's consumers and holds a committed offset of the group on the topic
        (the client commits the queues a rebalance gave it every 5 s, `persistConsumerOffsetInterval`). Per queue
        the 4.9.1 broker cannot tell: QUERY_CONSUMER_OFFSET answers SUCCESS with 0 for a queue never committed
        whose messages are all in memory, and GET_CONSUME_STATS lists every queue of a topic once one is
        committed (0 for the others); `queues_owned` is how many queues it lists."""
        t0 = time.monotonic()
        deadline = t0 + READY_TIMEOUT_S
        fetch = broker_stats_fetch(lambda: [[addrs[0]] for addrs in self.group_addrs()])
        topic = self.scenario.topic.name
        queues = self.scenario.topic.queues * len(self.group_addrs())  # every broker group has the topic's queues
        listed: dict[str, int] = {}
        owned: dict[str, int] = {}
        while True:
            for g in self.section.groups:
                listed[g.name] = min(consumer_count(addrs[0], g.name) for addrs in self.group_addrs())
                owned[g.name] = len({(r["broker"], r["queue_id"]) for r in fetch(g.name) or []
                                     if r["topic"] == topic})
            ready = all(listed[g.name] == g.consumers and owned[g.name] >= queues for g in self.section.groups)
            if ready:
                return {"listed": listed, "queues_owned": owned, "ready_s": round(time.monotonic() - t0, 3)}
            if time.monotonic() >= deadline:
                raise TimeoutError(f"consumers not ready within {READY_TIMEOUT_S:.0f} s: listed by the master "
                                   f"{listed}, queues in GET_CONSUME_STATS {owned} (want {queues} each)")
            time.sleep(POLL_S)

    def drain(self) -> dict[str, Any]:
        t0 = time.monotonic()
        deadline = t0 + self.section.drain
        fetch = broker_stats_fetch(self.group_addrs)
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

    def watch(self, on_lost: Any, intended: Any) -> None:
        """Report (once) a consumer process that ended on its own; see the module docstring."""
        self._on_lost = on_lost

        def loop() -> None:
            while not self._watching.wait(WATCH_S):
                for name, w in list(self.fleet.workers.items()):
                    if w.alive or self.stopped or intended(name):
                        continue
                    code = w.proc.returncode
                    how = f"killed by {signal.Signals(-code).name}" if code is not None and code < 0 \
                        else f"exit {code}"
                    on_lost(f"consumer process {name} (pid {w.pid}) ended on its own ({how}){_last_words(w.log_path)}",
                            time.time_ns())
                    return

        threading.Thread(target=loop, name="consumer-watch", daemon=True).start()

    def judge_phase(self, phase: str, start_ns: int, end_ns: int, targets: list[str]) -> None:
        """Each group that must keep up (`keep_up`) and whose clients held pulls back in the phase, unless a fault of
        the phase (`targets`) acts on the group: event `consumers_behind` (the analysis makes the phase's
        expectations unknown) and a line. The processes report every 0.5 s, so the phase's last half second may
        count toward the next phase."""
        for g in self.section.groups:
            if not g.keep_up or any(target_group(t) == g.name for t in targets):
                continue
            held = self.fleet.flow_control_between(g.name, start_ns, end_ns)
            if held:
                self.rd.event("consumers_behind", phase=phase, group=g.name, flow_control=held,
                              pull_threshold_for_queue=g.pull_threshold_for_queue)
                self.say(f"{phase}: consumer group {g.name} did not keep up: its clients held pulls back {held} "
                         f"times (over {g.pull_threshold_for_queue} messages cached in a queue); the expectations "
                         "over this phase will be unknown", "yellow")

    def stop(self) -> dict[str, Any] | None:
        self._watching.set()
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
