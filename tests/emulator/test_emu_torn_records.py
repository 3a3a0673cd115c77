"""Recovery and dispatch over torn commitlog records, as an ext4 error under a slave's replication writes leaves them
(issue 45): records cut at each field boundary, a zeroed tail, a NUL inside the topic, a wrong body CRC, an unknown
magic code. Recovery ends where `CommitLog.checkMessageAndReturnSize` stops taking records (the whole messages
before the torn one stay, nothing after it), the consume queues are rebuilt from what it kept, and the store starts.
A record that recovery keeps but whose topic no directory can be named after (a NUL) does not end the start with a
Python exception: the consume queue write fails and is retried as `putMessagePositionInfoWrapper` does.

The store files here are real files written with the commitlog's own record layout (`torn_store`); the end to end
case starts the emulator's broker process on such a store and asks it over the real remoting protocol. The same
stores on the real 4.9.1: `benchmarks/torn_records_vs_real.py` (docs/fidelity.md)."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from torn_store import (
    BODY_POS,
    FILE_SIZE,
    STORE_HOST,
    TOPIC,
    cases,
    properties_length,
    record,
    records,
    write_commitlog,
)

from emulator.config.broker_config import BrokerConfig
from emulator.store import message_store as message_store_module
from emulator.store.message_check import check_message, message_length
from emulator.store.message_store import MessageStore
from emulator.version import profile_for
from remoting.stored import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2

CASES = cases()


@pytest.fixture(autouse=True)
def _quick_consume_queue_retries(monkeypatch):
    """A consume queue write that cannot succeed (a NUL in its topic) is tried twice, not 30 times a second apart."""
    monkeypatch.setattr(message_store_module, "CQ_PUT_TRIES", 2)
    monkeypatch.setattr(message_store_module, "CQ_PUT_RETRY_S", 0.0)


def _store(root: Path, data: bytes, version: str = "4.9.1", **conf: str) -> MessageStore:
    write_commitlog(root, data)
    profile = profile_for(version)
    overrides = {"storePathRootDir": str(root), "storePathCommitLog": str(root / "commitlog"),
                 "mappedFileSizeCommitLog": str(FILE_SIZE), "brokerRole": "SLAVE", "brokerId": "1", **conf}
    return MessageStore(BrokerConfig(profile, overrides=overrides), profile, STORE_HOST)


def _recover(root: Path, data: bytes, version: str = "4.9.1", **conf: str) -> tuple[int, dict[int, int]]:
    """(recovery's end offset, the next queue offset of each queue of TOPIC) after load_and_recover."""
    store = _store(root, data, version, **conf)
    try:
        store.load_and_recover()
        return store.commitlog.max_offset(), {q: store.max_offset_in_queue(TOPIC, q) for q in (0, 1)}
    finally:
        store.commitlog.queue.close()
        for cq in store.consume_queues.values():
            cq.close()


@pytest.mark.parametrize("version", ["4.9.1", "5.3.0"])
@pytest.mark.parametrize("case", list(CASES))
def test_recovery_ends_where_the_brokers_check_stops_taking_records(tmp_path, case, version):
    """Up to the properties' length field a torn record's fields no longer add up to its size (or its body's CRC
    fails): recovery ends at the record. Past it the broker checks nothing more: a record whose properties were
    lost is kept, with no tags (the real 4.9.1 did the same, docs/fidelity.md)."""
    data, end = CASES[case]
    recovered, queues = _recover(tmp_path, data, version)
    assert recovered == end
    kept = sum(1 for start in records(5)[1] if start < end)
    assert queues == {0: (kept + 1) // 2, 1: kept // 2 - (1 if case == "nul-in-topic" else 0)}


def test_a_nul_inside_the_topic_with_the_properties_gone_is_cut_by_the_length_check(tmp_path, caplog):
    """What the flaky run's slave kept: the topic's bytes half zeroed and the properties after them too; the fields
    add up to another size than the record's, so 4.9.1 logs `[BUG]read total count not equals msg total size` and
    recovery ends there, before the record."""
    data, starts = records(4)
    rec = bytes(data[starts[3]:])
    topic_at = len(rec) - 2 - properties_length() - len(TOPIC)
    torn = bytearray(data)
    torn[starts[3] + topic_at + 3:] = b"\0" * (len(rec) - topic_at - 3)
    end, _ = _recover(tmp_path, torn)
    assert end == starts[3]
    assert "[BUG]read total count not equals msg total size" in caplog.text


def test_a_record_whose_topic_holds_a_nul_but_adds_up_is_taken_and_the_start_survives(tmp_path, caplog):
    """The broker does not read a topic's characters: a whole record with a NUL in its topic is recovered. Its
    consume queue's directory cannot be made, so the write is tried again a second apart and then the consume
    queues are marked in error; the store starts and later records are still kept in the commitlog."""
    data, starts = records(2)
    nul = record(2, len(data), topic="Torn\0opic")
    data += nul + record(3, len(data) + len(nul))
    store = _store(tmp_path, data)
    try:
        store.load_and_recover()
        assert store.commitlog.max_offset() == len(data)
        assert store.logics_queue_error
        assert store.check_store_status() == "SERVICE_NOT_AVAILABLE"
    finally:
        store.commitlog.queue.close()
    log = caplog.text
    assert "[BUG]put commit log position info to Torn\0opic:0" in log
    assert "[BUG]consume queue can not write, Torn\0opic 0" in log


def test_a_wrong_body_crc_ends_recovery_only_when_checked(tmp_path):
    data, starts = records(3)
    data[starts[2] + BODY_POS] ^= 0xFF
    assert _recover(tmp_path / "checked", data)[0] == starts[2]
    assert _recover(tmp_path / "unchecked", data, checkCRCOnRecover="false")[0] == len(data)


def test_magic_code_v2_is_a_record_from_5_1_only(tmp_path):
    data, _ = records(2)
    data += record(2, len(data), magic=MESSAGE_MAGIC_CODE_V2)
    assert _recover(tmp_path / "a", data, "4.9.1")[0] == len(data) - len(record(2, 0, magic=MESSAGE_MAGIC_CODE_V2))
    assert _recover(tmp_path / "b", data, "5.0.0")[0] < len(data)
    assert _recover(tmp_path / "c", data, "5.3.0")[0] == len(data)


def test_a_blank_record_of_any_size_moves_on_to_the_next_file(tmp_path):
    """A blank's size field is not read: recovery goes on in the next file."""
    data, _ = records(2)
    blank = (0).to_bytes(4, "big") + BLANK_MAGIC_CODE.to_bytes(4, "big", signed=True)
    store = _store(tmp_path, bytes(data) + blank)
    second = record(2, FILE_SIZE)
    write_commitlog(tmp_path, second, FILE_SIZE)
    try:
        store.load_and_recover()
        assert store.commitlog.max_offset() == FILE_SIZE + len(second)
        assert store.max_offset_in_queue(TOPIC, 0) == 2
    finally:
        store.commitlog.queue.close()


def test_the_length_check_is_calMsgLength():
    rec = record(0, 0)
    assert message_length(0, 109, len(TOPIC), properties_length(0), False) == len(rec)
    req = check_message(rec, 0, len(rec), check_crc=True)
    assert req.success and req.msg_size == len(rec) and req.topic == TOPIC and req.queue_id == 0
    assert check_message(rec, 0, len(rec) - 1, check_crc=True).underflow


def test_the_broker_starts_on_a_store_whose_last_record_is_torn_and_serves_what_it_kept(tmp_path):
    """End to end: the emulator's broker program on a store whose last record lost its tail starts, answers over
    the remoting protocol, and its queue ends before the torn record."""
    pytest.importorskip("harness")
    sys.path.insert(0, str(Path(__file__).parent))
    from emu_cluster import free_port_pair

    from remoting.admin import BrokerAdmin

    data, starts = records(5)
    root = tmp_path / "store"
    write_commitlog(root, data[:starts[4] + 40])
    port = free_port_pair()
    conf = tmp_path / "broker.conf"
    conf.write_text(f"brokerClusterName=c\nbrokerName=broker-a\nbrokerId=0\nbrokerRole=ASYNC_MASTER\n"
                    f"listenPort={port}\nhaListenPort={port + 1}\nstorePathRootDir={root}\n"
                    f"storePathCommitLog={root / 'commitlog'}\nmappedFileSizeCommitLog={FILE_SIZE}\nnamesrvAddr=127.0.0.1:1\n", encoding="utf-8")
    env = dict(os.environ, ROCKETMQ_LOG_DIR=str(tmp_path / "broker-logs"), RMQ_EMULATOR_BIND="127.0.0.1")
    proc = subprocess.Popen([sys.executable, "-m", "emulator.broker", "-c", str(conf)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    admin = BrokerAdmin()
    try:
        from waiting import poll

        addr = f"127.0.0.1:{port}"

        def answered():
            assert proc.poll() is None, proc.stderr.read()
            try:
                return admin.get_max_offset(addr, TOPIC, 0)
            except Exception:  # noqa: BLE001 - not listening yet
                return None

        assert poll(answered, timeout_s=60, what="the broker answering") == 2
        assert admin.get_max_offset(addr, TOPIC, 1) == 2
    finally:
        admin.close()
        proc.terminate()
        proc.wait(30)


def test_after_a_crash_recovery_says_how_far_it_read_into_the_record_it_cut(tmp_path, caplog):
    """The abort file left by a store that did not shut down cleanly (the slave's could not be removed from its
    read-only store): the next start logs `last shutdown abnormally` and, as the real 4.9.1 slave did after this
    fault, `recover physics file end, <file> pos=<where the check stopped reading>`, here past the bad body."""
    data, starts = records(3)
    body_at = starts[2] + BODY_POS
    data[body_at] ^= 0xFF
    (tmp_path / "abort").write_bytes(b"")
    caplog.set_level(logging.INFO, logger="RocketmqStore")
    assert _recover(tmp_path, data)[0] == starts[2]
    body_len = int.from_bytes(data[body_at - 4:body_at], "big")
    path = tmp_path / "commitlog" / f"{0:020d}"
    assert "last shutdown abnormally" in caplog.text
    assert f"recover physics file end, {path} pos={body_at + body_len}" in caplog.text
