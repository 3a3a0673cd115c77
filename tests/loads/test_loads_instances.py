"""Client instances of the load (`instance`, Java's instanceName): clients naming the same instance share its
connection to a broker, so a flood's sync timeout (which closes the channel under the 4.9.1 profile) fails the
probe's request in flight; a probe with its own instance keeps waiting for its answer. Real sockets, a scripted
broker that holds every send response during a stall."""
from __future__ import annotations

import threading

import pytest
from scripted_broker import ScriptedBroker

from loads.producers import MessageFactory, ProducerPool
from loads.spec import ClientSpec, LoadSpec, SpecError, parse_spec
from remoting.errors import RemotingError

STALL_S = 2.0


def _pool(broker: ScriptedBroker, probe_instance: str | None) -> tuple[ProducerPool, ClientSpec, ClientSpec]:
    spec = LoadSpec(topic="T", namesrv=broker.addr, model="closed", clients=[
        ClientSpec(name="flood", users=1, send_timeout_ms=300, retries=0, instance="app"),
        ClientSpec(name="probe", users=1, send_timeout_ms=10_000, retries=0, instance=probe_instance)])
    return ProducerPool(spec), spec.clients[0], spec.clients[1]


def _send(pool: ProducerPool, client: ClientSpec, key: str, out: dict) -> None:
    """`out[client]`: the outcome word and the error of its (only) attempt."""
    try:
        result = pool.get(client).send(MessageFactory("T", client).make(key))
        out[client.name] = (result.outcome, None)
    except RemotingError as e:
        out[client.name] = (type(e).__name__, e.attempts[0].error)


@pytest.mark.parametrize(("probe_instance", "probe_outcome"), [
    ("app", ("MQClientException", "RemotingSendRequestException")),  # failed by the flood's closed channel
    (None, ("SEND_OK", None))])  # own channel: answered when the stall ends
def test_a_flood_timeout_fails_the_probe_only_on_a_shared_instance(probe_instance, probe_outcome):
    with ScriptedBroker() as broker:
        pool, flood, probe = _pool(broker, probe_instance)
        try:
            warm: dict = {}
            _send(pool, flood, "warm-flood", warm)
            _send(pool, probe, "warm-probe", warm)
            assert warm == {"flood": ("SEND_OK", None), "probe": ("SEND_OK", None)}
            shares = pool.get(flood).client is pool.get(probe).client
            assert shares == (probe_instance == "app")
            broker.stall(STALL_S)
            out: dict = {}
            probe_thread = threading.Thread(target=_send, args=(pool, probe, "p", out))
            probe_thread.start()
            _send(pool, flood, "f", out)  # times out after 300 ms: the 4.9.1 client closes its channel
            probe_thread.join(15)
            assert out["flood"] == ("MQClientException", "RemotingTimeoutException")
            assert out["probe"] == probe_outcome
        finally:
            pool.shutdown()


def test_clients_of_different_profiles_cannot_share_an_instance():
    with pytest.raises(SpecError, match="instance 'app' is shared by clients of profiles java-4.9.1 and java-5.3"):
        parse_spec({"topic": "T", "namesrv": "127.0.0.1:9876", "model": "closed", "clients": [
            {"name": "a", "users": 1, "instance": "app"},
            {"name": "b", "users": 1, "instance": "app", "profile": "java-5.3"}]}, source="s")
