"""broker.conf handling and version profiles, without starting anything: Apache's keys and defaults per version,
one-line errors naming the file, key and allowed values, unknown keys kept out, the -c file rewritten on update."""
from __future__ import annotations

import pytest

from emulator.config.broker_config import BrokerConfig, ConfigError
from emulator.config.properties import parse_properties
from emulator.jvm_memory import parse_sizes
from emulator.version import VersionError, profile_for


def _conf(tmp_path, text: str):
    path = tmp_path / "broker.conf"
    path.write_text(text)
    return str(path)


def test_properties_format_like_java():
    text = "# c\n! c\na=1\nb : two\nc three\nd=x\\\n  y\ne=\\u0041\\tB\n"
    assert parse_properties(text) == {"a": "1", "b": "two", "c": "three", "d": "xy", "e": "A\tB"}


def test_defaults_of_4_9_1(tmp_path):
    conf = BrokerConfig(profile_for("4.9.1"), _conf(tmp_path, "listenPort=20911\n"))
    assert conf.get("syncFlushTimeout") == "5000"
    assert conf.get("haSlaveFallbehindMax") == str(256 << 20)
    assert conf.get("mappedFileSizeCommitLog") == str(1 << 30)
    assert conf.get("haListenPort") == "20912"  # always listenPort + 1 (BrokerStartup)
    assert conf.get("slaveTimeout") is None
    assert conf.get("storePathCommitLog").endswith("/store/commitlog")
    assert len(conf.items()) >= 160


def test_store_path_commitlog_does_not_follow_root_in_4_9_1_but_does_in_5(tmp_path):
    path = _conf(tmp_path, "storePathRootDir=/data/s\n")
    assert BrokerConfig(profile_for("4.9.1"), path).commitlog_dir() != "/data/s/commitlog"
    assert BrokerConfig(profile_for("5.3.0"), path).commitlog_dir() == "/data/s/commitlog"


def test_version_specific_keys(tmp_path):
    path = _conf(tmp_path, "haSlaveFallbehindMax=1048576\nslaveTimeout=1000\nfooBar=1\n")
    old = BrokerConfig(profile_for("4.9.1"), path)
    assert old.get("haSlaveFallbehindMax") == "1048576" and "slaveTimeout" in old.unknown
    mid = BrokerConfig(profile_for("4.9.3"), path)
    assert mid.get("slaveTimeout") == "1000"
    new = BrokerConfig(profile_for("5.2.0"), path)
    assert "haSlaveFallbehindMax" in new.unknown and new.get("inSyncReplicas") == "1"
    assert "fooBar" in old.unknown and "fooBar" in new.unknown


@pytest.mark.parametrize(("text", "words"), [
    ("brokerRole=MASTER\n", ["brokerRole", "'MASTER'", "ASYNC_MASTER, SYNC_MASTER, SLAVE"]),
    ("flushDiskType=SYNC\n", ["flushDiskType", "ASYNC_FLUSH, SYNC_FLUSH"]),
    ("syncFlushTimeout=5s\n", ["syncFlushTimeout", "an integer"]),
    ("slaveReadEnable=yes\n", ["slaveReadEnable", "true, false"]),
    ("brokerRole=SLAVE\nbrokerId=0\n", ["brokerId", "> 0"]),
])
def test_bad_values_fail_with_one_line(tmp_path, text, words):
    path = _conf(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        BrokerConfig(profile_for("4.9.1"), path)
    message = str(info.value)
    assert "\n" not in message and path in message
    for word in words:
        assert word in message


def test_update_rewrites_the_file_and_tells_listeners(tmp_path):
    path = _conf(tmp_path, "listenPort=20911\n")
    conf = BrokerConfig(profile_for("4.9.1"), path)
    seen = []
    conf.on_change(seen.append)
    conf.update({"haSlaveFallbehindMax": "1048576"})
    assert conf.get_int("haSlaveFallbehindMax") == 1048576
    assert seen == [{"haSlaveFallbehindMax": "1048576"}]
    assert conf.data_version.counter == 1
    written = parse_properties(open(path).read())
    assert written["haSlaveFallbehindMax"] == "1048576" and len(written) >= 160
    with pytest.raises(ConfigError):
        conf.update({"brokerRole": "NOPE"})


@pytest.mark.parametrize(("release", "name", "code", "wire"), [
    ("4.9.0", "4.9.1", 1, 393), ("4.9.2", "4.9.1", 1, 397), ("4.9.3", "4.9.3", 1, 399), ("4.9.8", "4.9.3", 1, 409),
    ("5.2.0", "5.x", 1, 453), ("5.3.0", "5.x", 2, 473), ("5.x", "5.x", 2, 473),
])
def test_version_profiles(release, name, code, wire):
    profile = profile_for(release)
    assert (profile.name, profile.pc_synchronized_code, profile.wire_version) == (name, code, wire)


@pytest.mark.parametrize("bad", ["4.8.0", "6.0.0", "latest", ""])
def test_unknown_versions_are_refused(bad):
    with pytest.raises(VersionError, match="allowed"):
        profile_for(bad)


def test_jvm_sizes():
    assert parse_sizes("-Xms2g -Xmx2g -Xmn1g -XX:MaxDirectMemorySize=1g") == {"s": 2 << 30, "x": 2 << 30, "n": 1 << 30}
