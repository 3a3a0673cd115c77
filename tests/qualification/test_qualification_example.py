"""A release-qualification suite as a user writes it: plain pytest with the rmq-chaos plugin's fixtures only
(`rmq_cluster`, `fault`, `assert_run_expectations`; docs/pytest-plugin.md), on the embedded cluster (4.9.1
emulator) unless `--rmq-program apache` names Apache's binary distribution at `$ROCKETMQ_HOME`.

    python -m pytest tests/qualification                                   # the plugin installed (entry point)
    python -m pytest -p harness.pytest_plugin tests/qualification          # from a checkout, not installed
"""
from __future__ import annotations

import time

import pytest

from remoting.outcome import outcome_of

pytestmark = pytest.mark.root

READONLY_SLAVE = {
    "name": "qualification-readonly-slave",
    # 1 MiB commitlog files: the read-only slave's replication cliff (its next file cannot be created) comes after
    # about 250 sends of 4000 B instead of 250 000
    "cluster": {"version": "4.9.1", "store_size": "64MiB",
                "broker": {"common": {"mappedFileSizeCommitLog": 1048576}}},
    "phases": [{"name": "test", "duration": "1s"}],
}
BODY = b"q" * 4000
CLIFF_SENDS = 2000  # far past the cliff (about 260 sends); the loop ends at the second failed send in a row
CLIFF_DEADLINE_S = 90.0


def _send(producer, cluster, timeout_ms: int = 3000) -> str:
    try:
        return outcome_of(producer.send(cluster.message(BODY), timeout_ms))[0]
    except Exception as err:  # noqa: BLE001 - an exception is the outcome (the Java client's class name)
        return outcome_of(err)[0]


def test_healthy_cluster_acknowledges_every_send(rmq_cluster) -> None:
    with rmq_cluster.producer() as producer:
        results = [producer.send(rmq_cluster.message(f"healthy-{i}"), 3000) for i in range(50)]
    assert [r.status for r in results] == ["SEND_OK"] * 50
    assert {r.queue_id for r in results} == set(range(rmq_cluster.scenario.topic.queues)), "round robin"
    assert set(rmq_cluster.broker_addrs) == {"master", "slave"}


@pytest.mark.long
@pytest.mark.rmq_scenario(READONLY_SLAVE)
def test_readonly_slave_turns_send_ok_into_timeouts(rmq_cluster, fault) -> None:
    with rmq_cluster.producer() as producer:
        assert [_send(producer, rmq_cluster) for _ in range(20)] == ["SEND_OK"] * 20
        with fault("readonly_fs", "slave") as applied:
            assert applied.evidence["verify"]["write_errno"] == "EROFS"
            outcomes: list[str] = []
            deadline = time.monotonic() + CLIFF_DEADLINE_S
            while len(outcomes) < CLIFF_SENDS and time.monotonic() < deadline:
                outcomes.append(_send(producer, rmq_cluster))
                if len(outcomes) >= 2 and "SEND_OK" not in outcomes[-2:]:
                    break
    # the 4.9.1 slave ignores EROFS and keeps acknowledging (SEND_OK for data it never stored) ...
    assert outcomes[0] == "SEND_OK", outcomes[:5]
    # ... until it cannot create its next commitlog file: then no send is acknowledged any more
    assert "SEND_OK" not in outcomes[-2:], f"no outage after {len(outcomes)} sends"
    stuck = {o for o in outcomes if o != "SEND_OK"}
    assert stuck <= {"RemotingTimeoutException", "RemotingTooMuchRequestException", "MQClientException",
                          "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"}, stuck


@pytest.mark.long
@pytest.mark.spark
def test_short_healthy_run_meets_its_expectations(assert_run_expectations) -> None:
    assert_run_expectations("healthy-short.yaml")
