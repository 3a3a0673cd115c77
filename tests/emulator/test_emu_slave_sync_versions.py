"""What a slave's SlaveSynchronize takes and logs, without starting anything: the topic configs and subscription
groups are replaced only when the master's data version (timestamp and counter, as `DataVersion.equals`) is not the
slave's, which is when 4.x logs `Update slave topic config from master` (the real 4.9.1's slave logged it once at
its first sync and never again while the master's topics stayed as they were)."""
from __future__ import annotations

from emulator.config.broker_config import BrokerConfig
from emulator.subscription_groups import SubscriptionGroupManager
from emulator.topics import TopicConfigManager
from emulator.version import profile_for


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
