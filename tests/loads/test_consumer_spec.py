"""`GroupSpec`: defaults, the JSON round trip, and one-line errors naming the key and the allowed values."""
from __future__ import annotations

import pytest

from loads.consumer_spec import GroupSpec, StuckSpec, parse_group, parse_groups
from loads.spec import SpecError


def test_defaults_and_json_round_trip():
    g = parse_group({"name": "orders"})
    assert (g.consumers, g.threads, g.processing, g.stuck, g.consume_from, g.reconsume_share) == (
        1, 20, 0.0, None, "CONSUME_FROM_LAST_OFFSET", None)
    full = GroupSpec(name="slow-1", consumers=3, threads=4, processing=2.5, stuck=StuckSpec(share=0.1, hold_s=60),
                     consume_from="CONSUME_FROM_FIRST_OFFSET", reconsume_share=0.5)
    assert GroupSpec.model_validate_json(full.model_dump_json()) == full
    assert [full.worker(0), full.worker(2, restart=1)] == ["slow-1.c0", "slow-1.c2.r1"]


@pytest.mark.parametrize("data, expected", [
    ({"name": "a b"}, "g: name: String should match pattern"),
    ({"name": "DEFAULT_CONSUMER"}, "g: name: 'DEFAULT_CONSUMER' is a RocketMQ system group"),
    ({"name": "CID_RMQ_SYS_X"}, "is a RocketMQ system group"),
    ({"name": "g", "consumers": 0}, "g: consumers: Input should be greater than or equal to 1"),
    ({"name": "g", "consumers": 33}, "g: consumers: Input should be less than or equal to 32"),
    ({"name": "g", "threads": 1001}, "g: threads: Input should be less than or equal to 1000"),
    ({"name": "g", "processing": -1}, "g: processing: Input should be greater than or equal to 0"),
    ({"name": "g", "stuck": {"share": 1.5, "hold_s": 1}}, "g: stuck.share: Input should be less than or equal to 1"),
    ({"name": "g", "stuck": {"share": 0.1}}, "g: stuck.hold_s: Field required"),
    ({"name": "g", "consume_from": "CONSUME_FROM_TIMESTAMP"},
     "g: consume_from: Input should be 'CONSUME_FROM_LAST_OFFSET' or 'CONSUME_FROM_FIRST_OFFSET'"),
    ({"name": "g", "reconsume_share": 2}, "g: reconsume_share: Input should be less than or equal to 1"),
    ({"name": "g", "thread": 2}, "g: thread: Extra inputs are not permitted"),
    ("orders", "g: a consumer group is a mapping of keys to values, got str"),
])
def test_errors_are_one_line_naming_the_key(data, expected):
    with pytest.raises(SpecError) as e:
        parse_group(data, "g")
    assert expected in str(e.value) and "\n" not in str(e.value)


def test_groups_need_unique_names():
    with pytest.raises(SpecError, match=r"^scenario.yaml: consumers.groups: group names must be unique, repeated: a$"):
        parse_groups([{"name": "a"}, {"name": "a"}], "scenario.yaml: consumers.groups")
    with pytest.raises(SpecError, match=r"consumers.groups.1: name"):
        parse_groups([{"name": "a"}, {"name": "%x"}])
