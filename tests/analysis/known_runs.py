"""Generator of run directories with known answers, for the analysis tests.

`RunBuilder` writes a run directory through the real contract (`analysis.contract.write_part`, events as JSON
lines); the three runs below are built so that their answers are known by construction: which keys were dropped
from the read-back, when the first error completes, which second after the revert is the first clean one.

- `incident_run`: healthy -> readonly (fault `ro` applied 10.0 s, verified 10.5 s, reverted 19.5-20.0 s) ->
  recovery. The sends started in the apply (10.0-10.5 s: 50 SEND_OK) and the revert (19.5-20.0 s: 50
  MQBrokerException) are the phase's transition slices (analysis.transitions), not in its own row.
- `clean_run`: no fault, every send SEND_OK and read back from both nodes: the loss check finds nothing.
- `interrupted_run`: killed in its second phase: half a line at the end of events.jsonl, a truncated part file,
  no read-back, no run_end.
- `consumer_run` (in `known_consumer_run.py`, built with this module's `RunBuilder`): two consumer groups.
- `partial_readback_run`: the slave could serve its queue 2 only up to offset 60 (PULL_MESSAGE code 1, the 4.9.1
  IndexOutOfBoundsException) and the master its queue 3 up to 90; `readback/queues.json` says so (or is left out:
  the same directory as a run made before that file existed; or says the slave could not be read at all).
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from analysis import contract as c

T0 = 1_700_000_000_000_000_000  # wall ns of the first phase start
MS = 1_000_000
TIMEOUT_REMARK = "sendDefaultImpl call timeout"


@dataclass
class Answers:
    """What the job must find, decided while building the run."""

    lost: set[str] = field(default_factory=set)
    not_on_slave: set[str] = field(default_factory=set)
    recovered: set[str] = field(default_factory=set)
    duplicated: set[str] = field(default_factory=set)
    unexpected: set[str] = field(default_factory=set)
    foreign: set[str] = field(default_factory=set)
    numbers: dict[str, Any] = field(default_factory=dict)


def transition_of(answers: Answers, start_ns: int, phase: str | None = None) -> str | None:
    """The transition slice a send started at `start_ns` belongs to, from the run's known answer
    (`numbers["transitions"]`: label -> [start, end) in ms from T0); None outside them and for `interrupted` rows."""
    if phase == "interrupted":
        return None
    for label, (lo, hi) in answers.numbers.get("transitions", {}).items():
        if T0 + lo * MS <= start_ns < T0 + hi * MS:
            return label
    return None


class RunBuilder:
    """Collects events, request rows, read-back rows and metrics of one run, then writes the directory."""

    def __init__(self, root: Path, run_id: str) -> None:
        self.run_id = run_id
        self.layout = c.RunLayout(root / run_id)
        self.events: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.readback: list[dict[str, Any]] = []
        self.metrics: list[dict[str, Any]] = []
        self.coverage: list[dict[str, Any]] | None = None  # readback/queues.json entries; None: no such file
        self.consumes: list[dict[str, Any]] = []
        self.lag: list[dict[str, Any]] = []
        self.store_logs: dict[str, list[str]] = {}  # node -> store.log lines
        self.answers = Answers()

    @staticmethod
    def at(ms: float) -> int:
        return T0 + int(round(ms * MS))

    def event(self, ms: float, name: str, **extra: Any) -> None:
        self.events.append({"wall_ns": self.at(ms), "mono_ns": 5_000_000_000 + int(ms * MS), "event": name,
                            **extra})

    def fault(self, ms: float, fault_id: str, action: str, status: str, **extra: Any) -> None:
        self.event(ms, "fault", fault_id=fault_id, kind="slave-readonly", target="slave", action=action,
                   status=status, **extra)

    def send(self, *, worker: str, seq: int, start_ms: float, service_ms: float, outcome: str, phase: str,
             client: str = "flood", queue_ms: float = 0.5, response_code: int | None = None,
             remark: str | None = None, place: tuple[int, int] | None = None,
             broker: str | None = "broker-a") -> str:
        key = f"{self.run_id}:{worker}:{seq}"
        start = self.at(start_ms)
        intended = start - int(round(queue_ms * MS))
        end = start + int(round(service_ms * MS))
        self.requests.append({
            "run_id": self.run_id, "worker": worker, "client": client, "seq": seq, "topic": "chaos", "key": key,
            "msg_id": f"MSG{len(self.requests):08d}", "intended_ns": intended, "start_ns": start, "end_ns": end,
            "latency_ms": (end - intended) / MS, "service_ms": (end - start) / MS, "phase": phase,
            "outcome": outcome, "response_code": response_code, "remark": remark, "broker": broker,
            "queue_id": place[0] if place else seq % 4, "queue_offset": place[1] if place else seq,
            "attempts": 1 if c.outcome_class(outcome) == c.OK else 3,
        })
        return key

    def read(self, node: str, key: str, times: int = 1) -> None:
        for _ in range(times):
            n = len(self.readback)
            self.readback.append({"run_id": self.run_id, "node": node, "broker": "broker-a", "topic": "chaos",
                                  "queue_id": n % 4, "queue_offset": n, "commitlog_offset": n * 200, "key": key,
                                  "msg_id": f"RB{n:08d}", "store_ts_ms": T0 // MS, "body_size": 128})

    def metric(self, node: str, sec: int, **values: Any) -> None:
        self.metrics.append({"run_id": self.run_id, "node": node, "ts_ns": self.at(sec * 1000 + 500), **values})

    def consume(self, key: str, *, group: str, born_ms: float, delivered_ms: float, stored_ms: float | None = None,
                worker: str | None = None, queue: tuple[int, int] = (0, 0), broker_id: int = 0,
                result: str = "CONSUME_SUCCESS", reconsume_times: int = 0) -> None:
        self.consumes.append({
            "run_id": self.run_id, "worker": worker or f"{group}.c0", "group": group, "consumer": "127.0.0.1@1",
            "topic": "chaos", "key": key, "msg_id": f"M{len(self.consumes)}", "broker": "broker-a",
            "broker_id": broker_id, "pulled_topic": "chaos", "queue_id": queue[0], "queue_offset": queue[1],
            "born_ms": T0 // MS + int(born_ms), "store_ms": T0 // MS + int(stored_ms if stored_ms is not None
                                                                             else born_ms),
            "pulled_ns": self.at(delivered_ms), "delivered_ns": self.at(delivered_ms),
            "done_ns": self.at(delivered_ms + 1), "result": result, "reconsume_times": reconsume_times,
            "body_size": 128})

    def lag_sample(self, group: str, sec: int, committed: int, lag: int) -> None:
        """One second of a group: two queues, the committed offsets and lag split between them."""
        for q in (0, 1):
            c_q = committed // 2 + (committed % 2 if q == 0 else 0)
            l_q = lag // 2 + (lag % 2 if q == 0 else 0)
            self.lag.append({"run_id": self.run_id, "group": group, "topic": "chaos", "ts_ns": self.at(sec * 1000 + 500),
                             "broker": "broker-a", "queue_id": q, "broker_offset": c_q + l_q, "consumer_offset": c_q,
                             "lag": l_q, "last_timestamp_ms": T0 // MS, "consume_tps": 1.0})

    def write(self, scenario: dict[str, Any], cluster: dict[str, Any] | None = None, parts: int = 3) -> Path:
        self.layout.make_dirs()
        self.layout.scenario.write_text(yaml.safe_dump(scenario, sort_keys=False))
        if cluster is not None:
            self.layout.cluster.write_text(json.dumps(cluster, indent=2))
        with open(self.layout.events, "w") as f:
            for ev in self.events:
                f.write(json.dumps(ev) + "\n")
        for rows, d, schema, worker in ((self.requests, self.layout.requests, c.REQUEST_SCHEMA, "load"),
                                        (self.metrics, self.layout.metrics, c.METRICS_SCHEMA, "collector"),
                                        (self.readback, self.layout.readback, c.READBACK_SCHEMA, "readback")):
            size = max(1, -(-len(rows) // parts))
            for i in range(0, len(rows), size):
                c.write_part(rows[i:i + size], d, worker, schema)
        for rows, d, schema, worker in ((self.consumes, self.layout.consumes, c.CONSUME_SCHEMA, "g.c0"),
                                        (self.lag, self.layout.consumer_lag, c.CONSUMER_LAG_SCHEMA, "lag")):
            if rows:
                d.mkdir(parents=True, exist_ok=True)
                size = max(1, -(-len(rows) // 2))
                for i in range(0, len(rows), size):
                    c.write_part(rows[i:i + size], d, worker, schema)
        for node, lines in self.store_logs.items():
            (self.layout.root / "logs" / node).mkdir(parents=True, exist_ok=True)
            (self.layout.root / "logs" / node / "store.log").write_text("".join(f"{x}\n" for x in lines))
        if self.coverage is not None:
            c.write_readback_queues(self.layout.readback_queues, self.run_id, "chaos", self.coverage)
        elif not self.readback:
            shutil.rmtree(self.layout.readback, ignore_errors=True)
        return self.layout.root


def _cluster(fallbehind: int) -> dict[str, Any]:
    broker = {"brokerClusterName": "DefaultCluster", "brokerName": "broker-a", "flushDiskType": "SYNC_FLUSH",
              "syncFlushTimeout": "5000", "haSlaveFallbehindMax": str(fallbehind)}
    return {"backend": "local", "rocketmq_version": "4.9.1", "nodes": {
        "master": {"role": "master", "addr": "127.0.0.1:10911", "config": {**broker, "brokerRole": "SYNC_MASTER"}},
        "slave": {"role": "slave", "addr": "127.0.0.1:11911", "config": {**broker, "brokerRole": "SLAVE"}},
    }}


def _standard_events(b: RunBuilder, phases: list[tuple[str, int, int]], readback: bool = True) -> None:
    b.event(-5000, "run_start", run_id=b.run_id, scenario=b.run_id)
    b.event(-4000, "cluster_up", backend="local", nodes=["namesrv", "master", "slave"])
    b.event(-3000, "cluster_ready", backend="local", nodes=["namesrv", "master", "slave"])
    b.event(0, "load_start", model="open", rate=100)
    for i, (name, start, end) in enumerate(phases):
        b.event(start, "phase_start", phase=name, index=i, duration_s=(end - start) / 1000, rate=100)
        b.event(end, "phase_end", phase=name, index=i)
    end = phases[-1][2]
    b.event(end, "load_stop", model="open", rate=100)
    if readback:
        b.event(end + 1000, "readback_start")
        b.event(end + 5000, "readback_end", rows=len(b.readback), nodes=["master", "slave"])
    b.event(end + 6000, "run_end", run_id=b.run_id, status="completed", error=None)


def _metrics(b: RunBuilder, seconds: int, ro: tuple[int, int] | None) -> None:
    for sec in range(seconds):
        in_ro = ro is not None and ro[0] <= sec < ro[1]
        b.metric("master", sec, cpu_percent=40.0, rss_bytes=300 << 20, swap_bytes=0, read_bytes_per_s=0.0,
                 write_bytes_per_s=50e6, put_tps=100.0, commitlog_max_offset=sec * 20000,
                 slave_fallbehind_bytes=(sec - ro[0]) * 20000 if in_ro else 0, send_queue_size=0,
                 page_cache_lock_ms=1.0)
        b.metric("slave", sec, cpu_percent=20.0, rss_bytes=200 << 20,
                 swap_bytes=(sec - ro[0] + 1) << 20 if in_ro else 0, read_bytes_per_s=0.0,
                 write_bytes_per_s=0.0 if in_ro else 50e6, put_tps=None, commitlog_max_offset=None,
                 slave_fallbehind_bytes=None, send_queue_size=None, page_cache_lock_ms=None)


INCIDENT_EXPECT = [
    {"name": "ok-before", "phase": "healthy", "outcome": "SEND_OK", "metric": "share", "min": 0.99},
    {"phase": "readonly", "client": "probe", "outcome": "RemotingTooMuchRequestException", "metric": "count",
     "min": 1},
    {"phase": "readonly", "outcome": "SLAVE_NOT_AVAILABLE", "metric": "latency_p99_ms", "basis": "actual",
     "max": 100},
    {"name": "no-ok-late", "phase": "readonly", "after_s": 5, "outcome": "SEND_OK", "metric": "share", "max": 0.0},
    {"name": "nothing-lost", "metric": "lost", "max": 0},
    {"metric": "not_on_slave", "min": 1},
    {"fault": "ro", "metric": "fault_to_first_error_s", "max": 30},
    {"fault": "ro", "metric": "recovery_s", "max": 60},
    {"name": "ok-during-ro", "phase": "readonly", "outcome": "SEND_OK", "metric": "share", "min": 0.9},
    {"name": "healthy-p99", "phase": "healthy", "metric": "latency_p99_ms", "max": 995},
    {"name": "healthy-rate", "phase": "healthy", "metric": "rate", "min": 99, "max": 101},
    {"metric": "duplicated", "max": 5},
    {"metric": "recovered", "min": 100},
    {"metric": "unexpected", "max": 2},
    {"name": "probe-first-sna", "fault": "ro", "client": "probe", "outcome": "SLAVE_NOT_AVAILABLE",
     "metric": "fault_to_first_error_s", "max": 30},
    {"name": "probe-recovery", "fault": "ro", "client": "probe", "metric": "recovery_s", "max": 60},
    {"name": "probe-never-flush", "fault": "ro", "client": "probe", "outcome": "FLUSH_SLAVE_TIMEOUT",
     "metric": "fault_to_first_error_s", "max": 30},
    {"name": "lost-in-ro", "phase": "readonly", "metric": "lost", "max": 4},
    {"name": "busy-count", "remark_contains": "TIMEOUT_CLEAN_QUEUE", "metric": "count", "min": 200, "max": 200},
    {"name": "code-11", "response_code": 11, "metric": "count", "min": 305, "max": 305},
    {"name": "ro-max", "phase": "readonly", "metric": "latency_max_ms", "max": 4000},
    {"name": "ro-p50-late", "phase": "readonly", "after_s": 8, "before_s": 9, "metric": "latency_p50_ms",
     "basis": "actual", "max": 210},
]
INCIDENT_FAILING = {"nothing-lost": 7.0, "ok-during-ro": 150 / 910, "probe-never-flush": float("inf")}
"""`ok-during-ro`: the readonly phase's own sends, without its transitions' 100 (50 of them SEND_OK)."""
INCIDENT_UNKNOWN = {"probe-recovery": "no send (matching the filters) completed after the fault's revert"}
PHASES_3 = [("healthy", 0, 10_000), ("readonly", 10_000, 20_000), ("recovery", 20_000, 30_000)]


def incident_run(root: Path, run_id: str = "ro-run") -> tuple[Path, Answers]:
    """The read-only slave incident with known answers (see the module docstring and `Answers.numbers`)."""
    b = RunBuilder(root, run_id)
    a = b.answers
    acked, info_keys, slave_missing = [], [], set()
    for i in range(1000):  # healthy: latency (intended basis) i+1 ms, 100 sends/s
        acked.append(b.send(worker="w1", seq=i, start_ms=i * 10, service_ms=i + 0.5, outcome=c.SEND_OK,
                            phase="healthy", response_code=0))
    for j in range(1000):  # readonly
        seq, start = 1000 + j, 10_000 + j * 10
        if j < 200:
            k = b.send(worker="w1", seq=seq, start_ms=start, service_ms=2.0, outcome=c.SEND_OK, phase="readonly",
                       response_code=0)
            acked.append(k)
            slave_missing.add(k)
        elif j < 500:
            info_keys.append(b.send(worker="w1", seq=seq, start_ms=start, service_ms=3000.0,
                                    outcome=c.REMOTING_TOO_MUCH_REQUEST, phase="readonly", remark=TIMEOUT_REMARK))
        elif j < 800:
            k = b.send(worker="w1", seq=seq, start_ms=start, service_ms=5.0, outcome=c.SLAVE_NOT_AVAILABLE,
                       phase="readonly", response_code=11)
            acked.append(k)
            slave_missing.add(k)
        else:
            remark = (f"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: "
                      f"{200 + j % 17}ms, size of queue: {j % 5}")
            b.send(worker="w1", seq=seq, start_ms=start, service_ms=210.0, outcome=c.MQ_BROKER_EXCEPTION,
                   phase="readonly", response_code=2, remark=remark)
    for m in range(10):  # a probe producer inside the outage
        if m < 5:
            b.send(worker="p1", seq=m, start_ms=12_500 + m * 500, service_ms=3000.0, client="probe",
                   outcome=c.REMOTING_TOO_MUCH_REQUEST, phase="readonly", remark=TIMEOUT_REMARK)
        else:
            k = b.send(worker="p1", seq=m, start_ms=12_500 + m * 500, service_ms=7.0, client="probe",
                       outcome=c.SLAVE_NOT_AVAILABLE, phase="readonly", response_code=11)
            acked.append(k)
            slave_missing.add(k)
    timeouts = []
    for k_ in range(1000):  # recovery: timeouts first, then SEND_OK
        seq, start = 2000 + k_, 20_000 + k_ * 10
        if k_ < 150:
            timeouts.append(b.send(worker="w1", seq=seq, start_ms=start, service_ms=1000.0,
                                   outcome=c.REMOTING_TIMEOUT, phase="recovery"))
        else:
            acked.append(b.send(worker="w1", seq=seq, start_ms=start, service_ms=2.0, outcome=c.SEND_OK,
                                phase="recovery", response_code=0))
    # the read-back: drop 7 acknowledged keys, store 120 unacknowledged ones, 5 twice, 2 unknown, 1 foreign
    dropped = {f"{run_id}:w1:{n}" for n in (3, 500, 999, 1500, 1650, 1700, 1799)}
    recovered = set(info_keys[:100]) | set(timeouts[:20])
    duplicated = {f"{run_id}:w1:{n}" for n in range(100, 105)}
    unexpected = {f"{run_id}:w9:1", f"{run_id}:w9:2"}
    foreign = {"other-run:w1:7"}
    for k in acked:
        if k not in dropped:
            b.read("master", k, 2 if k in duplicated else 1)
            if k not in slave_missing:
                b.read("slave", k)
    for k in sorted(recovered | unexpected | foreign):
        b.read("master", k)
        b.read("slave", k)
    a.lost, a.recovered, a.duplicated, a.unexpected, a.foreign = dropped, recovered, duplicated, unexpected, foreign
    a.not_on_slave = slave_missing - dropped
    b.readback.sort(key=lambda r: (r["node"], r["key"]))

    _standard_events(b, PHASES_3)
    b.fault(10_000, "ro", "apply", "started", params={"node": "slave"})
    b.fault(10_100, "ro", "apply", "ok")
    b.fault(10_500, "ro", "verify", "ok", evidence={"errno": "EROFS"})
    b.fault(19_500, "ro", "revert", "started")
    b.fault(20_000, "ro", "revert", "ok")
    b.events.sort(key=lambda e: e["wall_ns"])
    _metrics(b, 35, ro=(10, 20))
    a.numbers = {
        "attempted": 3010, "acknowledged": len(acked), "fault_to_first_error_s": 4.5,
        "first_error_outcome": c.REMOTING_TOO_MUCH_REQUEST, "recovery_s": 3.0,
        "probe_first_sna_s": 4.507, "healthy_intended": {"p50": 500.0, "p90": 900.0, "p99": 990.0,
                                                         "p999": 999.0, "max": 1000.0},
        "healthy_actual": {"p50": 499.5, "p90": 899.5, "p99": 989.5, "p999": 998.5, "max": 999.5},
        "transitions": {"ro apply": (10_000, 10_500), "ro revert": (19_500, 20_000)},  # ms from T0, [start, end)
    }
    scenario = {"name": "slave-readonly", "phases": [{"name": n, "duration_s": (e - s) / 1000}
                                                     for n, s, e in PHASES_3], "expect": INCIDENT_EXPECT}
    return b.write(scenario, _cluster(268435456)), a


CLEAN_EXPECT = [
    {"name": "all-ok", "outcome": "SEND_OK", "metric": "share", "min": 0.99},
    {"name": "none-lost", "metric": "lost", "max": 0},
    {"name": "all-on-slave", "metric": "not_on_slave", "max": 0},
    {"metric": "duplicated", "max": 0},
    {"metric": "unexpected", "max": 0},
    {"name": "rate", "phase": "steady", "metric": "rate", "min": 90},
    {"name": "p999", "metric": "latency_p999_ms", "basis": "actual", "max": 50},
]


PAGECACHERT_LINE = ("{t} INFO StoreStatsService - [PAGECACHERT] TotalPut {n}, PutMessageDistributeTime [<=0ms]:0 "
                    "[0~10ms]:{fast} [10~50ms]:{slow} [50~100ms]:0 [100~200ms]:0 [200~500ms]:0 [500ms~1s]:0 [1~2s]:0 "
                    "[2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0 ")
"""The line format of a real 4.9.1 store.log (logs/master/rocketmqlogs/store.log of a `--program apache` run)."""


def clean_run(root: Path, run_id: str = "clean-run", expect: list[dict[str, Any]] | None = None,
              pagecache: bool = False) -> tuple[Path, Answers]:
    """Two healthy phases, every send acknowledged and read back from master and slave. `pagecache`: the master's
    store.log has a `[PAGECACHERT]` line in the steady phase (a run without consumers whose broker logged one)."""
    b = RunBuilder(root, run_id)
    phases = [("warmup", 0, 5_000), ("steady", 5_000, 15_000)]
    for i in range(1500):
        phase = "warmup" if i < 500 else "steady"
        k = b.send(worker="w1", seq=i, start_ms=i * 10, service_ms=1.0 + (i % 7), outcome=c.SEND_OK,
                   phase=phase, response_code=0)
        b.read("master", k)
        b.read("slave", k)
    _standard_events(b, phases)
    b.events.sort(key=lambda e: e["wall_ns"])
    _metrics(b, 20, ro=None)
    b.answers.numbers = {"attempted": 1500, "acknowledged": 1500}
    if pagecache:
        import time as _time
        t = _time.strftime("%Y-%m-%d %H:%M:%S", _time.gmtime(T0 // 1_000_000_000 + 10))
        b.store_logs["master"] = [PAGECACHERT_LINE.format(t=t, n=1000, fast=1000, slow=0)]
    scenario = {"name": "baseline", "phases": [{"name": n, "duration_s": (e - s) / 1000} for n, s, e in phases],
                "expect": CLEAN_EXPECT + (expect or [])}
    return b.write(scenario, _cluster(1048576)), b.answers


CUT_EXPECT = [
    {"name": "healthy-ok", "phase": "healthy", "outcome": "SEND_OK", "metric": "share", "min": 0.99},
    {"name": "healthy-count", "phase": "healthy", "metric": "count", "min": 100},
    {"name": "cut-lost", "metric": "lost", "max": 0},
    {"name": "cut-recovery", "fault": "ro", "metric": "recovery_s", "max": 60},
]


def interrupted_run(root: Path, run_id: str = "cut-run") -> tuple[Path, Answers]:
    """Killed 4 s into its readonly phase: events cut mid-line, the last request part truncated, no read-back."""
    b = RunBuilder(root, run_id)
    for i in range(1000):
        b.send(worker="w1", seq=i, start_ms=i * 10, service_ms=i + 0.5, outcome=c.SEND_OK, phase="healthy")
    for j in range(400):
        b.send(worker="w1", seq=1000 + j, start_ms=10_000 + j * 10, service_ms=3000.0 if j >= 100 else 2.0,
               outcome=c.REMOTING_TOO_MUCH_REQUEST if j >= 100 else c.SEND_OK, phase="readonly",
               remark=TIMEOUT_REMARK if j >= 100 else None)
    b.event(-5000, "run_start", run_id=run_id, scenario=run_id)
    b.event(0, "load_start", model="open", rate=100)
    b.event(0, "phase_start", phase="healthy", index=0, duration_s=10, rate=100)
    b.event(10_000, "phase_end", phase="healthy", index=0)
    b.event(10_000, "phase_start", phase="readonly", index=1, duration_s=10, rate=100)
    b.fault(10_000, "ro", "apply", "started")
    b.fault(10_100, "ro", "apply", "ok")
    b.fault(10_500, "ro", "verify", "ok", evidence={"errno": "EROFS"})
    _metrics(b, 14, ro=(10, 20))
    scenario = {"name": "slave-readonly", "phases": [{"name": "healthy", "duration_s": 10},
                                                     {"name": "readonly", "duration_s": 10}], "expect": CUT_EXPECT}
    kept, cut = b.requests[:1300], b.requests[1300:]
    b.requests = kept
    path = b.write(scenario, _cluster(268435456), parts=2)
    with open(b.layout.events, "a") as f:
        f.write(f'{{"wall_ns": {b.at(13_000)}, "mono_ns": 1, "event": "fau')  # the kill, mid-line
    whole = c.write_part(cut, b.layout.requests, "load", c.REQUEST_SCHEMA)
    data = whole.read_bytes()
    whole.write_bytes(data[: len(data) // 2])  # a writer that did not rename atomically, killed mid-write
    b.answers.numbers = {"attempted_readable": 1300, "truncated_part": whole.name,
                         "transitions": {"ro apply": (10_000, 10_500)}}
    return path, b.answers


IOOBE = "java.lang.IndexOutOfBoundsException"
PARTIAL_EXPECT = [
    {"name": "lost", "metric": "lost", "max": 3},
    {"name": "not-on-slave", "metric": "not_on_slave", "max": 3},
    {"name": "not-on-slave-steady", "phase": "steady", "metric": "not_on_slave", "max": 3},
    {"name": "unseen-slave", "metric": "unseen_slave", "max": 39},
    {"name": "unseen-master", "metric": "unseen_master", "max": 10},
]
SLAVE_READ_TO, MASTER_READ_TO = 60, 90
SLAVE_SHORT_END = 80


def _queue(node: str, q: int, n: int, read_to: int | None = None, unreadable: bool = False) -> dict[str, Any]:
    """A coverage entry of `readback/queues.json`: complete, partial (read to `read_to`) or unreadable; the node's
    queue holds `n` entries (its max offset)."""
    entry = {"node": node, "broker": "broker-a", "queue_id": q, "min_offset": 0, "max_offset": n,
             "offsets_error": None, "read_to": n, "rows": n, "status": c.QUEUE_COMPLETE, "error": None,
             "response_code": None, "remark": None}
    if unreadable:
        entry.update(read_to=0, rows=0, status=c.QUEUE_UNREADABLE, error="MQBrokerException", response_code=1,
                     remark=IOOBE)
    elif read_to is not None:
        entry.update(read_to=read_to, rows=read_to, status=c.QUEUE_PARTIAL, error="MQBrokerException",
                     response_code=1, remark=IOOBE)
    return entry


def partial_readback_run(root: Path, run_id: str = "partial-run", coverage: str = "partial") -> tuple[Path, Answers]:
    """400 acknowledged sends, seq i placed at queue i % 4, offset i // 4 (100 per queue). The master lacks 3 keys
    (seq 5, 9, 322); the slave lacks 3 more (seq 42, 120, 283). The slave's queue 2 was read up to offset 60 only,
    the master's queue 3 up to offset 90 (those keys are on the slave). `coverage`: "partial" (queues.json says so),
    "none" (no queues.json: as a run made before it existed), "slave-unreadable" / "master-unreadable" (no queue of
    that node could be read, no rows from it; the other node read whole), "slave-short" (as "partial", but the
    slave's queue 2 ends at offset 80, as a read-only slave's did: what lies past it is known absent, not unseen)."""
    b = RunBuilder(root, run_id)
    a = b.answers
    keys = {i: b.send(worker="w1", seq=i, start_ms=i * 10, service_ms=1.0, outcome=c.SEND_OK, phase="steady",
                      response_code=0, place=(i % 4, i // 4)) for i in range(400)}
    not_on_master, not_on_slave = {5, 9, 322}, {42, 120, 283}
    partly = coverage in ("partial", "none", "slave-short")
    slave_end = SLAVE_SHORT_END if coverage == "slave-short" else 100
    unseen_master = {i for i in keys if i % 4 == 3 and i // 4 >= MASTER_READ_TO} if partly else set()
    unseen_slave = {i for i in keys if i % 4 == 2 and SLAVE_READ_TO <= i // 4 < slave_end} if partly else set()
    not_on_slave |= {i for i in keys if i % 4 == 2 and i // 4 >= slave_end}
    for i, k in keys.items():
        if coverage != "master-unreadable" and i not in not_on_master and i not in unseen_master:
            b.read("master", k)
        if coverage != "slave-unreadable" and i not in not_on_slave and i not in unseen_slave:
            b.read("slave", k)
    b.readback.sort(key=lambda r: (r["node"], r["key"]))
    if coverage in ("partial", "slave-short"):
        b.coverage = [_queue("master", q, 100, MASTER_READ_TO if q == 3 else None) for q in range(4)] + [
            _queue("slave", q, slave_end if q == 2 else 100, SLAVE_READ_TO if q == 2 else None) for q in range(4)]
        a.lost = {keys[i] for i in not_on_master}
        a.not_on_slave = {keys[i] for i in not_on_slave - not_on_master}
        a.numbers = {"unseen_master": {keys[i] for i in unseen_master},
                     "unseen_slave": {keys[i] for i in unseen_slave - not_on_master}}
    elif coverage in ("slave-unreadable", "master-unreadable"):
        gone = coverage.split("-")[0]
        b.coverage = [_queue(n, q, 100, unreadable=n == gone) for n in ("master", "slave") for q in range(4)]
        a.lost = {keys[i] for i in not_on_master} if gone == "slave" else set()
    else:  # what the job found before the coverage file existed: every unread place judged
        a.lost = {keys[i] for i in not_on_master | unseen_master}
        a.not_on_slave = {keys[i] for i in (not_on_slave | unseen_slave) - not_on_master}
    nodes = {"master": sum(r["node"] == "master" for r in b.readback),
             "slave": sum(r["node"] == "slave" for r in b.readback)}
    b.event(-5000, "run_start", run_id=run_id, scenario=run_id)
    b.event(0, "load_start", model="open", rate=100)
    b.event(0, "phase_start", phase="steady", index=0, duration_s=4, rate=100)
    b.event(4000, "phase_end", phase="steady", index=0)
    b.event(4000, "load_stop", model="open", rate=100)
    b.event(5000, "readback_start")
    b.event(9000, "readback_end", rows=len(b.readback), nodes=nodes, incomplete=[
        e for e in b.coverage or [] if e["status"] != c.QUEUE_COMPLETE])
    b.event(10_000, "run_end", run_id=run_id, status="completed", error=None)
    scenario = {"name": "partial-readback", "phases": [{"name": "steady", "duration_s": 4}],
                "expect": PARTIAL_EXPECT}
    return b.write(scenario, _cluster(268435456)), a
