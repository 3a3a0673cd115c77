"""LoadSpec: JSON round trip, client resolution (shares, own rates, users), phase rates, and one-line errors that
name the file, the key and the allowed values."""
from __future__ import annotations

import pytest

from loads.spec import LoadSpec, SpecError, load_spec, parse_spec, spec_from_env

BASE = {"topic": "ChaosTopic", "namesrv": "127.0.0.1:9876"}


def test_round_trips_through_json():
    spec = LoadSpec.model_validate({
        **BASE, "model": "open", "rate": 3000,
        "clients": [{"name": "flood", "users": 64, "send_timeout_ms": 3000, "tags": "TagA", "keys": ["k1"]},
                    {"name": "probe", "model": "closed", "users": 1, "send_timeout_ms": 30000}],
        "phases": [{"name": "healthy", "rate": 3000, "duration_s": 10}, {"name": "readonly", "rate": 1000}],
    })
    again = LoadSpec.model_validate_json(spec.model_dump_json())
    assert again == spec
    assert again.initial_phase == "healthy"


def test_example_flood_and_probe_resolve_to_users_and_rates():
    spec = LoadSpec.model_validate({
        **BASE, "rate": 3000,
        "clients": [{"name": "flood", "users": 64}, {"name": "probe", "model": "closed", "users": 1,
                                                      "send_timeout_ms": 30000}]})
    plan = spec.plan()
    assert (plan["flood"].model, plan["flood"].users, plan["flood"].rate) == ("open", 64, 3000)
    assert (plan["probe"].model, plan["probe"].users, plan["probe"].rate) == ("closed", 1, None)
    assert spec.drain_s == 35.0  # the longest send timeout plus a margin


def test_shares_split_the_rate_and_own_rates_stay():
    spec = LoadSpec.model_validate({
        **BASE, "rate": 1000, "users": 100,
        "clients": [{"name": "a", "share": 0.6}, {"name": "b"}, {"name": "c"}, {"name": "d", "rate": 7}],
        "phases": [{"name": "p2", "rate": 2000, "rates": {"d": 70}}]})
    plan = spec.plan()
    assert plan["a"].rate == pytest.approx(600)
    assert plan["b"].rate == pytest.approx(200) and plan["c"].rate == pytest.approx(200)
    assert plan["d"].rate == 7
    assert plan["a"].users == 60
    in_p2 = spec.plan(rate=spec.rate_in("p2", None, spec.rate), phase="p2")
    assert in_p2["a"].rate == pytest.approx(1200) and in_p2["d"].rate == 70


@pytest.mark.parametrize(("data", "expected"), [
    ({**BASE, "model": "opne", "rate": 1}, "spec.yaml: model: Input should be 'open' or 'closed'"),
    ({**BASE, "rate": 1, "clients": [{"name": "a", "profile": "java-4.8"}]},
     "spec.yaml: clients.0.profile: Input should be 'java-4.9.1', 'java-4.9.3' or 'java-5.3'"),
    ({**BASE, "namesrv": "localhost", "rate": 1}, "spec.yaml: namesrv: 'localhost' is not host:port"),
    ({**BASE}, "spec.yaml: rate: open client(s) flood take a share"),
    ({**BASE, "rate": 1, "clients": [{"name": "a"}, {"name": "a"}]}, "spec.yaml: clients: names must be unique"),
    ({**BASE, "rate": 1, "colour": "red"}, "spec.yaml: colour: Extra inputs are not permitted"),
    ({**BASE, "rate": 1, "flush_interval_s": 5}, "spec.yaml: flush_interval_s: Input should be less than or equal"),
])
def test_bad_input_is_one_line_naming_file_key_and_allowed_values(data, expected):
    with pytest.raises(SpecError) as err:
        parse_spec(data, "spec.yaml")
    message = str(err.value)
    assert message.startswith(expected)
    assert "\n" not in message


def test_load_spec_reads_yaml_and_reports_unreadable_files(tmp_path):
    path = tmp_path / "load.yaml"
    path.write_text("topic: T\nnamesrv: 127.0.0.1:9876\nrate: 5\n")
    assert load_spec(path).rate == 5
    bad = tmp_path / "bad.yaml"
    bad.write_text("topic: [unclosed\n")
    with pytest.raises(SpecError, match=r"^.*bad\.yaml: not valid YAML"):
        load_spec(bad)
    with pytest.raises(SpecError, match=r"missing\.json: cannot read"):
        load_spec(tmp_path / "missing.json")


def test_spec_from_environment_names_the_variable():
    spec = spec_from_env({"RMQ_LOAD_TOPIC": "T", "RMQ_LOAD_NAMESRV": "127.0.0.1:9876", "RMQ_LOAD_RATE": "250",
                          "RMQ_LOAD_MESSAGE_SIZE": "1024", "RMQ_LOAD_SEND_TIMEOUT_MS": "5000"})
    assert spec.rate == 250 and spec.clients[0].message_size == 1024 and spec.clients[0].send_timeout_ms == 5000
    with pytest.raises(SpecError, match=r"^environment: RMQ_LOAD_MESSAGE_SIZE: Input should be a valid integer"):
        spec_from_env({"RMQ_LOAD_TOPIC": "T", "RMQ_LOAD_NAMESRV": "h:1", "RMQ_LOAD_RATE": "1",
                       "RMQ_LOAD_MESSAGE_SIZE": "big"})
    with pytest.raises(SpecError, match="RMQ_LOAD_SPEC"):
        spec_from_env({})


def test_a_client_can_send_with_the_binary_header(broker):
    """`serialize_type: ROCKETMQ` (Java's `rocketmq.serialize.type`) reaches the wire: the client's requests carry the
    binary header and are answered; the default stays JSON, as the Java client's."""
    from loads.producers import ProducerPool
    from remoting.codes import SerializeType
    from remoting.message import Message
    from remoting.route import MessageQueue

    spec = LoadSpec.model_validate({"topic": "ChaosTopic", "namesrv": broker.addr, "model": "closed",
                                    "clients": [{"name": "bin", "users": 1, "serialize_type": "ROCKETMQ"},
                                                {"name": "json", "users": 1}]})
    pool = ProducerPool(spec)
    try:
        binary, plain = pool.get(spec.clients[0]), pool.get(spec.clients[1])
        queue = MessageQueue("ChaosTopic", "broker-a", 0)
        assert binary._request(Message("ChaosTopic", b"x"), queue).serialize_type == SerializeType.ROCKETMQ
        assert plain._request(Message("ChaosTopic", b"x"), queue).serialize_type == SerializeType.JSON
        assert binary.send(Message("ChaosTopic", b"x", keys="k"), 3000).status == "SEND_OK"
    finally:
        pool.shutdown()
    with pytest.raises(ValueError, match="serialize_type"):
        LoadSpec.model_validate({**BASE, "clients": [{"name": "a", "users": 1, "serialize_type": "XML"}]})
