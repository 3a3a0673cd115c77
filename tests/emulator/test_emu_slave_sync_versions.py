"""What a slave's SlaveSynchronize takes and logs, without starting anything: the topic configs and subscription
groups are replaced only when the master's data version (timestamp and counter, as `DataVersion.equals`) is not the
slave's, which is when 4.x logs `Update slave topic config from master` (the real 4.9.1's slave logged it once at
its first sync and never again while the master's topics stayed as they were); and when a slave outside controller
mode syncs, per version (the loop on a clock of its own)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from emulator import controller
from emulator.config.broker_config import BrokerConfig
from emulator.subscription_groups import SubscriptionGroupManager
from emulator.topics import TopicConfigManager
from emulator.version import profile_for
from remoting.errors import MQBrokerException


def _config(tmp_path) -> BrokerConfig:
    path = tmp_path / "broker.conf"
    path.write_text(f"listenPort=20911\nbrokerName=broker-a\nstorePathRootDir={tmp_path / 'store'}\n")
    return BrokerConfig(profile_for("4.9.1"), str(path))


def test_a_sync_takes_the_masters_tables_only_when_their_version_changed(tmp_path):
    master, slave = TopicConfigManager(_config(tmp_path)), TopicConfigManager(_config(tmp_path))
    master.table["T"] = {"topicName": "T"}
    master.data_version.next_version()
    assert slave.replace_all(master.wrapper()) is True and "T" in slave.table
    assert slave.replace_all(master.wrapper()) is False  # the same version: nothing taken, nothing logged
    wrapper = master.wrapper()
    wrapper["dataVersion"]["stateVersion"] = 7  # 5.x's master epoch is not part of DataVersion.equals
    assert slave.replace_all(wrapper) is False
    master.data_version.next_version()
    assert slave.replace_all(master.wrapper()) is True

    groups_master, groups_slave = SubscriptionGroupManager(_config(tmp_path)), SubscriptionGroupManager(_config(tmp_path))
    groups_master.data_version.next_version()
    assert groups_slave.replace_all(groups_master.wrapper()) is True
    assert groups_slave.replace_all(groups_master.wrapper()) is False


class _Clock:
    """The loop's time: each wait moves it on; the loop ends once `until` is reached."""

    def __init__(self, until: float) -> None:
        self.now, self.until = 0.0, until

    def wait(self, seconds: float) -> bool:
        self.now += seconds
        return self.is_set()

    def is_set(self) -> bool:
        return self.now >= self.until


@pytest.mark.parametrize("version, expected", [("4.9.1", [3.0, 13.0, 23.0, 33.0]),
                                               ("5.3.0", [10.0, 73.0, 136.0])])
def test_when_a_slave_outside_controller_mode_syncs(monkeypatch, version: str, expected: list[float]) -> None:
    """4.x: every 10 s from 3 s after start. 5.x (BrokerController): every 3 s from 10 s it looks whether more than
    60 s have passed since the last sync, so about every 63 s."""
    clock, synced = _Clock(until=expected[-1] + 1), []
    monkeypatch.setattr(controller.time, "monotonic", lambda: clock.now)
    broker = SimpleNamespace(profile=profile_for(version), _stopped=clock, master_addr="127.0.0.1:10911",
                             slave_synchronize=lambda _master: synced.append(clock.now))
    controller.BrokerController._slave_sync_loop(broker)
    assert synced == expected


def test_a_failed_sync_logs_the_java_clients_exception() -> None:
    """The real 4.9.1's slave, its master killed: `SyncConsumerOffset Exception, <addr>` and below it
    `org.apache.rocketmq.remoting.exception.RemotingConnectException: connect to <addr> failed`."""
    addr = "127.0.0.1:10911"
    assert controller._as_java(ConnectionRefusedError(111, "refused"), addr) == (
        "org.apache.rocketmq.remoting.exception.RemotingConnectException: connect to 127.0.0.1:10911 failed")
    assert controller._as_java(TimeoutError(), addr).endswith(
        "RemotingTimeoutException: wait response on the channel <127.0.0.1:10911> timeout, 3000(ms)")
    assert controller._as_java(ConnectionError("closed"), addr).endswith(
        "RemotingSendRequestException: send request to <127.0.0.1:10911> failed")
    assert controller._as_java(MQBrokerException(1, "busy", addr), addr).startswith(
        "org.apache.rocketmq.client.exception.MQBrokerException: CODE: 1  DESC: busy BROKER: 127.0.0.1:10911")
