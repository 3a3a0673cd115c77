"""The broker calls the harness makes (readiness, topic creation, effective config, runtime figures, the ready probe
send, the read-back pulls), over one shared `remoting` client. Every function here is a thin use of `remoting`:
request codes, headers, route/cluster-info parsing, the producer and the pull consumer are all theirs.

Functions that poll (`runtime_info_quick`) never raise: a broker that does not answer in time gives None."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import make_request
from remoting.errors import RemotingError
from remoting.headers import CreateTopicRequestHeader, GetRouteInfoRequestHeader
from remoting.route import ClusterInfo, TopicRouteData

ADMIN_TIMEOUT_MS = 3000
QUICK_TIMEOUT_MS = 700
PERM_READ_WRITE = 6
PROBE_GROUP = "rmq-chaos-ready"
PROBE_TIMEOUT_MS = 3000
POLL_S = 0.2
READBACK_GROUP = "rmq-chaos-readback"
READBACK_BATCH = 32

_lock = threading.Lock()
_client: RemotingClient | None = None


class BrokerCallError(RuntimeError):
    """A broker answered a harness call with an error code (one line: what, where, code, remark)."""


def client() -> RemotingClient:
    global _client
    with _lock:
        if _client is None:
            _client = RemotingClient()
        return _client


def shutdown() -> None:
    """Close every connection (the cluster is going down)."""
    global _client
    with _lock:
        if _client is not None:
            _client.shutdown()
            _client = None


def _call(addr: str, code: int, ext: dict[str, Any] | None = None, timeout_ms: int = ADMIN_TIMEOUT_MS,
          body: bytes = b"") -> Any:
    response = client().invoke_sync(addr, make_request(code, ext or {}, body), timeout_ms)
    if response.code != ResponseCode.SUCCESS:
        raise BrokerCallError(f"{RequestCode(code).name} to {addr}: code {response.code} {response.remark or ''}")
    return response


def runtime_info(addr: str, timeout_ms: int = ADMIN_TIMEOUT_MS) -> dict[str, str] | None:
    """GET_BROKER_RUNTIME_INFO as a dict (KVTable `table`); None when the broker does not answer."""
    from remoting import fastjson
    try:
        response = _call(addr, RequestCode.GET_BROKER_RUNTIME_INFO, timeout_ms=timeout_ms)
    except (RemotingError, BrokerCallError, OSError):
        return None
    return {str(k): str(v) for k, v in (fastjson.loads(response.body).get("table") or {}).items()}


def runtime_info_quick(addr: str | None) -> dict[str, str] | None:
    """For the once-a-second collector: a short timeout, never raises."""
    if not addr:
        return None
    try:
        return runtime_info(addr, QUICK_TIMEOUT_MS)
    except Exception:  # noqa: BLE001 - a figure missing this second is null, not an error
        return None


def broker_config(addr: str) -> dict[str, str]:
    """GET_BROKER_CONFIG: the broker's effective properties (`key=value` lines)."""
    body = _call(addr, RequestCode.GET_BROKER_CONFIG).body.decode("utf-8")
    out: dict[str, str] = {}
    for line in body.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def create_topic(addr: str, topic: str, queues: int) -> None:
    """UPDATE_AND_CREATE_TOPIC on one broker (master and slave alike, so the slave can serve the read-back)."""
    header = CreateTopicRequestHeader(topic=topic, defaultTopic="TBW102", readQueueNums=queues,
                                      writeQueueNums=queues, perm=PERM_READ_WRITE, topicFilterType="SINGLE_TAG",
                                      topicSysFlag=0, order=False)
    _call(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_fields())


def route(namesrv: str, topic: str) -> TopicRouteData | None:
    """GET_ROUTEINFO_BY_TOPIC; None while the name server has no route (code 17)."""
    try:
        response = _call(namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC,
                         GetRouteInfoRequestHeader(topic=topic).to_fields())
    except BrokerCallError:
        return None
    return TopicRouteData.from_json(response.body)


def registered(namesrv: str, broker_addr: str, broker_id: int | None) -> bool:
    """The name server lists `broker_addr` (under `broker_id` when given) in its cluster info."""
    info = ClusterInfo.from_json(_call(namesrv, RequestCode.GET_BROKER_CLUSTER_INFO).body)
    for data in info.broker_addr_table.values():
        for bid, addr in data.broker_addrs.items():
            if addr == broker_addr and (broker_id is None or bid == broker_id):
                return True
    return False


def wait_route(namesrv: str, topic: str, master_addr: str, deadline: float) -> TopicRouteData:
    """Poll until the route of `topic` names `master_addr` as a master with writable queues."""
    while True:
        r = route(namesrv, topic)
        if r and any(b.master_addr == master_addr for b in r.broker_datas) and any(
                q.write_queue_nums > 0 for q in r.queue_datas):
            return r
        if time.monotonic() >= deadline:
            raise TimeoutError(f"no route for topic {topic} with master {master_addr} at {namesrv}")
        time.sleep(POLL_S)


def wait_probe_send_ok(namesrv: str, topic: str, deadline: float) -> None:
    """Send to `topic` until one send gets SEND_OK (a SYNC_MASTER answers SLAVE_NOT_AVAILABLE until the slave's HA
    connection is up). The topic is the harness's own, never the scenario's, so the read-back does not see it."""
    from remoting.message import Message
    from remoting.producer import Producer

    producer = Producer(namesrv, PROBE_GROUP)
    last = None
    try:
        while True:
            try:
                result = producer.send(Message(topic=topic, body=b"ready"), timeout_ms=PROBE_TIMEOUT_MS)
                last = result.status
                if result.status == "SEND_OK":
                    return
            except RemotingError as err:
                last = f"{type(err).__name__}: {err}"
            if time.monotonic() >= deadline:
                raise TimeoutError(f"the probe send to {topic} never got SEND_OK (last: {last})")
            time.sleep(POLL_S)
    finally:
        producer.shutdown()


def read_queue(addr: str, topic: str, queue_id: int) -> Iterator[Any]:
    """Every message of one queue of one broker, oldest first (the pull consumer pages through it)."""
    from remoting.consumer import PullConsumer

    consumer = PullConsumer(READBACK_GROUP, client=client())
    yield from consumer.iter_queue(addr, topic, queue_id)
