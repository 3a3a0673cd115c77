"""The broker calls the harness makes (readiness, topic creation, effective config, runtime figures, the ready probe
send, the read-back's offsets and pulls), over one shared `remoting` client. Every function here is a thin use of
`remoting`: request codes, headers, route/cluster-info parsing, the producer and the pull consumer are all theirs.

Functions that poll (`runtime_info_quick`) never raise: a broker that does not answer in time gives None."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from remoting.admin import BrokerAdmin
from remoting.client import RemotingClient
from remoting.errors import RemotingError
from remoting.namesrv import NameServerClient
from remoting.route import TopicRouteData

ADMIN_TIMEOUT_MS = 3000
QUICK_TIMEOUT_MS = 700
PERM_READ_WRITE = 6
PROBE_GROUP = "rmq-chaos-ready"
PROBE_TIMEOUT_MS = 3000
POLL_S = 0.2
READBACK_GROUP = "rmq-chaos-readback"

_lock = threading.Lock()
_admin: BrokerAdmin | None = None


def admin() -> BrokerAdmin:
    """The shared admin (its `client` is shared by the name-server calls and the read-back pulls)."""
    global _admin
    with _lock:
        if _admin is None:
            _admin = BrokerAdmin(timeout_ms=ADMIN_TIMEOUT_MS)
        return _admin


def shutdown() -> None:
    """Close every connection (the cluster is going down)."""
    global _admin
    with _lock:
        if _admin is not None:
            _admin.client.shutdown()
            _admin = None


def _namesrv(addr: str) -> NameServerClient:
    return NameServerClient(RemotingClient(addr))


def runtime_info(addr: str, timeout_ms: int = ADMIN_TIMEOUT_MS) -> dict[str, str] | None:
    """GET_BROKER_RUNTIME_INFO as a dict; None when the broker does not answer."""
    try:
        return admin().get_runtime_info(addr, timeout_ms)
    except (RemotingError, OSError):
        return None


def runtime_info_quick(addr: str | None) -> dict[str, str] | None:
    """For the once-a-second collector: a short timeout, never raises."""
    if not addr:
        return None
    try:
        return runtime_info(addr, QUICK_TIMEOUT_MS)
    except Exception:  # noqa: BLE001 - a figure missing this second is null, not an error
        return None


def broker_config(addr: str) -> dict[str, str]:
    """GET_BROKER_CONFIG: the broker's effective properties."""
    return admin().get_broker_config(addr)


def create_topic(addr: str, topic: str, queues: int) -> None:
    """UPDATE_AND_CREATE_TOPIC on one broker (master and slave alike, so the slave can serve the read-back)."""
    admin().create_topic(addr, topic, queues, queues, PERM_READ_WRITE)


def route(namesrv: str, topic: str) -> TopicRouteData | None:
    """GET_ROUTEINFO_BY_TOPIC; None while the name server has no route."""
    ns = _namesrv(namesrv)
    try:
        return ns.get_route(topic)
    except RemotingError:
        return None
    finally:
        ns.client.shutdown()


def registered(namesrv: str, broker_addr: str, broker_id: int | None) -> bool:
    """The name server lists `broker_addr` (under `broker_id` when given) in its cluster info."""
    ns = _namesrv(namesrv)
    try:
        info = ns.get_cluster_info()
    finally:
        ns.client.shutdown()
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
    last: str | None = None
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
        producer.close()


def queue_offset(addr: str, topic: str, queue_id: int, which: str) -> int:
    """GET_MIN_OFFSET (`which="min"`) or GET_MAX_OFFSET (`"max"`) of one queue; raises the remoting error."""
    a = admin()
    return (a.get_min_offset if which == "min" else a.get_max_offset)(addr, topic, queue_id)


def read_queue(addr: str, topic: str, queue_id: int) -> Iterator[Any]:
    """Every message of one queue of one broker, oldest first (the pull consumer pages through it)."""
    from remoting.consumer import PullConsumer

    consumer = PullConsumer(READBACK_GROUP, client=admin().client)
    yield from consumer.iter_queue(addr, topic, queue_id)
