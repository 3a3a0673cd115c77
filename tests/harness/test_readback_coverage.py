"""The read-back over real sockets (`harness.readback.read_back` with `harness.brokerclient`'s pulls and offsets)
against scripted brokers that serve some queues and fail others the way a broken 4.9.1 slave did: PULL_MESSAGE
answered with code 1 (SYSTEM_ERROR, `java.lang.IndexOutOfBoundsException`) after some FOUND pages, GET_MAX_OFFSET or
GET_MIN_OFFSET failing, a FOUND body that does not decode, a node that refuses connections. Every queue is still
read, the good queues' rows are written, and `readback/queues.json` says how far each queue was read and why it
stopped."""
from __future__ import annotations

import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "remoting"))

from remoting_scripted_server import RefusingAddress, Reply, ScriptedServer  # noqa: E402

from analysis import contract as c  # noqa: E402
from harness import brokerclient  # noqa: E402
from harness.readback import ReadbackSource, ReadbackTimeout, describe, incomplete_queues, read_back  # noqa: E402
from remoting.codes import RequestCode, ResponseCode  # noqa: E402
from remoting.headers import GetMaxOffsetRequestHeader, PullMessageRequestHeader  # noqa: E402
from remoting.stored import encode_stored_message  # noqa: E402

TOPIC = "chaos"
RUN = "rb-run"
IOOBE = "java.lang.IndexOutOfBoundsException"


def stored(queue_id: int, offset: int) -> bytes:
    return encode_stored_message(
        topic=TOPIC, queue_id=queue_id, body=b"x" * 16, properties={"KEYS": f"{RUN}:w0:{queue_id}-{offset}",
                                                                    "UNIQ_KEY": f"U{queue_id}-{offset}"},
        queue_offset=offset, commitlog_offset=queue_id * 100_000 + offset * 200, born_timestamp=1,
        born_host="127.0.0.1:4000", store_timestamp=2, store_host="127.0.0.1:4001")


def broker(sizes: dict[int, int], *, pull_fails_at: dict[int, int] | None = None, max_fails: set[int] = frozenset(),
           min_fails: set[int] = frozenset(), garbage_at: dict[int, int] | None = None):
    """A handler serving queue q with offsets 0..sizes[q]-1 as a 4.9.1 broker does; `pull_fails_at[q] = n`: a pull
    from offset >= n answers code 1 with the IndexOutOfBoundsException remark; `garbage_at[q] = n`: the FOUND body
    of a pull from n is zeros; `max_fails`/`min_fails`: GET_MAX_OFFSET/GET_MIN_OFFSET of those queues answer code 1."""
    pull_fails_at, garbage_at = pull_fails_at or {}, garbage_at or {}

    def handle(cmd):
        if cmd.code in (RequestCode.GET_MAX_OFFSET, RequestCode.GET_MIN_OFFSET):
            q = GetMaxOffsetRequestHeader.from_fields(cmd.ext_fields).queueId
            if q in (max_fails if cmd.code == RequestCode.GET_MAX_OFFSET else min_fails):
                return Reply(ResponseCode.SYSTEM_ERROR, "offset table is broken")
            return Reply(ext={"offset": sizes.get(q, 0) if cmd.code == RequestCode.GET_MAX_OFFSET else 0})
        if cmd.code != RequestCode.PULL_MESSAGE:
            return Reply()
        h = PullMessageRequestHeader.from_fields(cmd.ext_fields)
        q, hi = h.queueId, sizes.get(h.queueId, 0)
        if q in pull_fails_at and h.queueOffset >= pull_fails_at[q]:
            return Reply(ResponseCode.SYSTEM_ERROR, IOOBE)
        ext = {"suggestWhichBrokerId": 0, "minOffset": 0, "maxOffset": hi}
        if h.queueOffset >= hi:
            return Reply(ResponseCode.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE", {**ext, "nextBeginOffset": hi})
        end = min(hi, h.queueOffset + h.maxMsgNums)
        body = (bytes(300) if garbage_at.get(q) == h.queueOffset
                else b"".join(stored(q, o) for o in range(h.queueOffset, end)))
        return Reply(ResponseCode.SUCCESS, "FOUND", {**ext, "nextBeginOffset": end}, body)

    return handle


@pytest.fixture
def servers():
    made: list[ScriptedServer] = []

    def make(handler) -> ScriptedServer:
        made.append(ScriptedServer(handler))
        return made[-1]

    yield make
    brokerclient.shutdown()  # the shared client the read-back used
    for s in made:
        s.close()


@pytest.fixture
def down():
    """An address that refuses connections: a node that is down."""
    with RefusingAddress() as addr:
        yield addr


def rows_of(readback: Path, node: str) -> list[dict]:
    return [r for p in sorted(readback.glob(f"part-{node}-*.parquet")) for r in pq.read_table(p).to_pylist()]


def by_queue(entries: list[dict]) -> dict[tuple[str, int], dict]:
    return {(e["node"], e["queue_id"]): e for e in entries}


def test_a_queue_the_slave_cannot_serve_ends_that_queue_only(tmp_path, servers):
    sizes = {0: 70, 1: 100, 2: 10, 3: 5}
    master = servers(broker(sizes))
    slave = servers(broker(sizes, pull_fails_at={1: 64}, max_fails={2}, min_fails={3}, garbage_at={0: 32}))
    sources = [ReadbackSource("master", "broker-a", master.addr), ReadbackSource("slave", "broker-a", slave.addr)]
    seen = []
    counts = read_back(RUN, TOPIC, 4, sources, brokerclient.read_queue, tmp_path, timeout_s=60,
                       progress=lambda node, q, n: seen.append((node, q, n)))

    # the master is read whole; the slave's good pages and its good queue are there too
    assert counts == {"master": 185, "slave": 32 + 64 + 10}
    assert seen[-1] == ("slave", 3, 106)
    master_rows = rows_of(tmp_path, "master")
    assert sorted((r["queue_id"], r["queue_offset"]) for r in master_rows) == sorted(
        (q, o) for q, n in sizes.items() for o in range(n))
    slave_rows = rows_of(tmp_path, "slave")
    got = {}
    for r in slave_rows:
        got.setdefault(r["queue_id"], []).append(r["queue_offset"])
    assert {q: sorted(v) for q, v in got.items()} == {0: list(range(32)), 1: list(range(64)), 2: list(range(10))}
    assert slave_rows[0]["key"] == f"{RUN}:w0:0-0"

    entries = c.read_readback_queues(tmp_path / c.READBACK_QUEUES_FILE)
    assert [(e["node"], e["queue_id"]) for e in entries] == [(n, q) for n in ("master", "slave") for q in range(4)]
    cov = by_queue(entries)
    for q, n in sizes.items():
        assert cov[("master", q)] == {"node": "master", "broker": "broker-a", "queue_id": q, "min_offset": 0,
                                      "max_offset": n, "offsets_error": None, "read_to": n, "rows": n,
                                      "status": "complete", "error": None, "response_code": None, "remark": None}
    ioobe = cov[("slave", 1)]
    assert (ioobe["status"], ioobe["read_to"], ioobe["rows"], ioobe["max_offset"]) == ("partial", 64, 64, 100)
    assert (ioobe["error"], ioobe["response_code"], ioobe["remark"]) == ("MQBrokerException", 1, IOOBE)
    garbage = cov[("slave", 0)]
    assert (garbage["status"], garbage["read_to"], garbage["rows"], garbage["error"]) == (
        "partial", 32, 32, "RemotingCommandException")
    assert f"{TOPIC}:0 at offset 32" in garbage["remark"] and "does not decode" in garbage["remark"]
    no_max = cov[("slave", 2)]  # GET_MAX_OFFSET failed, the pulls did not: read whole
    assert (no_max["status"], no_max["read_to"], no_max["rows"], no_max["max_offset"], no_max["min_offset"]) == (
        "complete", 10, 10, None, 0)
    assert no_max["offsets_error"] == "GET_MAX_OFFSET MQBrokerException code 1: offset table is broken"
    assert no_max["error"] is None
    no_min = cov[("slave", 3)]  # the pull consumer starts at GET_MIN_OFFSET: nothing could be read
    assert (no_min["status"], no_min["read_to"], no_min["rows"], no_min["min_offset"], no_min["max_offset"]) == (
        "unreadable", 0, 0, None, 5)
    assert (no_min["error"], no_min["response_code"], no_min["remark"]) == (
        "MQBrokerException", 1, "offset table is broken")

    incomplete = incomplete_queues(tmp_path)
    assert [(e["node"], e["queue_id"]) for e in incomplete] == [("slave", 0), ("slave", 1), ("slave", 3)]
    assert describe(ioobe) == (f"slave queue 1 partial: read to offset 64 of 100 (64 rows); MQBrokerException "
                               f"code 1: {IOOBE}")


def test_a_node_that_refuses_connections_is_recorded_not_raised(tmp_path, servers, down):
    master = servers(broker({0: 3, 1: 2}))
    sources = [ReadbackSource("master", "broker-a", master.addr), ReadbackSource("slave", "broker-a", down)]
    counts = read_back(RUN, TOPIC, 2, sources, brokerclient.read_queue, tmp_path, timeout_s=60)
    assert counts == {"master": 5, "slave": 0}
    cov = by_queue(c.read_readback_queues(tmp_path / c.READBACK_QUEUES_FILE))
    for q in (0, 1):
        e = cov[("slave", q)]
        assert (e["status"], e["rows"], e["read_to"], e["min_offset"], e["max_offset"]) == (
            "unreadable", 0, 0, None, None)
        assert e["error"] == "RemotingConnectException" and e["remark"] == f"connect to {down} failed"
        assert "GET_MIN_OFFSET RemotingConnectException" in e["offsets_error"]
    assert not list(tmp_path.glob("part-slave-*.parquet"))


def test_a_timeout_still_writes_the_coverage_read_so_far(tmp_path, servers):
    master = servers(broker({0: 3, 1: 3, 2: 3}))
    sources = [ReadbackSource("master", "broker-a", master.addr)]
    with pytest.raises(ReadbackTimeout, match="before master queue 1"):
        read_back(RUN, TOPIC, 3, sources, brokerclient.read_queue, tmp_path, timeout_s=0)
    entries = c.read_readback_queues(tmp_path / c.READBACK_QUEUES_FILE)
    assert [(e["queue_id"], e["status"], e["rows"]) for e in entries] == [(0, "complete", 3)]
    assert len(rows_of(tmp_path, "master")) == 3


class _Node:
    def __init__(self, status: str | None) -> None:
        self.status = status

    def exit_status(self) -> str | None:
        return self.status


class _Backend:
    """Stands in for the local backend's `read_back`: the real `read_back` against a scripted broker."""

    def __init__(self, rd, sources: list[ReadbackSource], nodes: dict | None = None) -> None:
        self.rd, self.sources, self.nodes = rd, sources, nodes or {}

    def read_back(self, timeout_s: float) -> dict[str, int]:
        return read_back(self.rd.run_id, TOPIC, 2, self.sources, brokerclient.read_queue, self.rd.layout.readback,
                         timeout_s)


def _run(tmp_path):
    from harness.rundir import RunDir
    from harness.scenario import Scenario

    scenario = Scenario.model_validate({"name": "rb", "load": {"model": "open", "rate": 10, "clients": [
        {"name": "flood", "users": 1}]}, "phases": [{"name": "a", "duration": "1s"}]})
    return scenario, RunDir.create(tmp_path, scenario)


def test_the_runner_warns_per_queue_and_still_ends_the_read_back(tmp_path, servers):
    from rich.console import Console

    from harness.progress import RunProgress
    from harness.runner import Runner

    scenario, rd = _run(tmp_path)
    master = servers(broker({0: 3, 1: 2}))
    slave = servers(broker({0: 3, 1: 40}, pull_fails_at={1: 32}))
    backend = _Backend(rd, [ReadbackSource("master", "broker-a", master.addr),
                            ReadbackSource("slave", "broker-a", slave.addr)])
    console = Console(record=True, width=200, force_terminal=False)
    Runner(scenario, tmp_path)._read_back(rd, backend, RunProgress(rd.run_id, 1.0, console=console))

    end = [e for e in rd.events() if e["event"] == "readback_end"]
    assert len(end) == 1 and end[0]["nodes"] == {"master": 5, "slave": 35} and end[0]["rows"] == 40
    assert end[0]["incomplete"] == [{"node": "slave", "broker": "broker-a", "queue_id": 1, "status": "partial",
                                     "read_to": 32, "max_offset": 40, "rows": 32, "error": "MQBrokerException",
                                     "response_code": 1, "remark": IOOBE}]
    text = console.export_text()
    assert (f"read-back: slave queue 1 partial: read to offset 32 of 40 (32 rows); MQBrokerException code 1: "
            f"{IOOBE}") in text
    assert "master 5, slave 35 messages; 1 queue(s) not read completely" in text


def test_a_node_that_died_fails_the_run_after_readback_end(tmp_path, servers, down):
    """Unreadable because its process died on its own (not stopped by the harness): the read-back ends and is
    recorded, then the run fails as it did when the read-back raised (the failure handler adds node_exit)."""
    from rich.console import Console

    from harness.progress import RunProgress
    from harness.runner import Runner

    scenario, rd = _run(tmp_path)
    slave = servers(broker({0: 3, 1: 2}))
    sources = [ReadbackSource("master", "broker-a", down), ReadbackSource("slave", "broker-a", slave.addr)]
    progress = RunProgress(rd.run_id, 1.0, console=Console(record=True, width=200, force_terminal=False))
    stopped = _Backend(rd, sources, nodes={"master": _Node(None), "slave": _Node(None)})
    Runner(scenario, tmp_path)._read_back(rd, stopped, progress)  # stopped by the harness (a fault): no failure
    died = _Backend(rd, sources, nodes={"master": _Node("killed by SIGBUS"), "slave": _Node(None)})
    with pytest.raises(RuntimeError, match=f"read-back: master not running \\(RemotingConnectException: connect to "
                                           f"{down} failed\\)"):
        Runner(scenario, tmp_path)._read_back(rd, died, progress)
    ends = [e for e in rd.events() if e["event"] == "readback_end"]
    assert len(ends) == 2 and ends[1]["nodes"] == {"master": 0, "slave": 5}
    assert [(q["node"], q["status"]) for q in ends[1]["incomplete"]] == [("master", "unreadable")] * 2
