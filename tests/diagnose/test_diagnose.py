"""`rmq-chaos diagnose` on the corpus (excerpts of rmq-chaos's own runs, emulator and real 4.9.1): each run's logs
are named as its scenario's mechanism first in rank, a healthy run's give no finding, the written scenario loads
and lints, and bad input is one line per file with a documented exit code."""
from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.diagnose import rank, reproduction, scan, write
from harness.scenario import load_scenarios

CORPUS = Path(__file__).resolve().parent / "corpus"
EXPECTED = {
    "consumer-backlog-stuck-thread": "stuck-consumer-listener",
    "stuck-listener-jstack": "stuck-consumer-listener",
    "slave-readonly-default": "replication-stalled-slave",
    "slave-frozen": "slave-dropped",
    "transient-store-pool": "page-cache-busy",
    "controller-and-master-killed": "controller-epoch-conflict",
    "slave-readonly-fallbehind-1m": "replication-stalled-slave",
    "master-killed-consumers": "master-lost",
    "master-killed-controller": "controller-failover",
    "master-killed-controller-consumers": "controller-failover-offsets",
    "unclean-election-off": "controller-no-in-sync-replica",
    "unclean-election-on": "controller-unclean-election",
    "syncstateset-expansion-race": "syncstateset-expansion-race",
    "slave-readonly-controller": "in-sync-replica-dropped",
    "master-disk-throttle": "store-flush-slow",
    "master-disk-throttle-async": "store-flush-slow",
    "master-swapping": "broker-swapping",
    "master-slave-partition": "slave-dropped",
    "namesrv-partition": "brokers-expired",
}
ALONE = ("slave-frozen", "master-killed-consumers", "slave-readonly-controller", "master-slave-partition",
         "namesrv-partition")
"""Cases whose other candidate (a stalled slave, keyed by the master's transfer timeouts or the slave's read-only
store; a dead master, keyed by the name server's removal of brokerId 0 after an idle close) is the first finding's
echo: left out (`harness.diagnose.ranking`)."""
SCENARIO = {"slave-readonly-fallbehind-1m": "slave-readonly-fallbehind-1m",
            "master-disk-throttle-async": "master-disk-throttle-async"}
"""Cases whose written reproduction starts from another shipped scenario than the mechanism's own (its broker.conf
says which: `Mechanism.scenario_below`, `Mechanism.scenario_if`)."""
CASES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())
RMQ_CHAOS = [sys.executable, "-m", "harness.cli"]


def _expected(case: str) -> str | None:
    return next((mech for suffix, mech in EXPECTED.items() if case.endswith(suffix)), None)


def test_every_corpus_case_is_known():
    assert CASES and all(_expected(c) or "healthy" in c for c in CASES), CASES


@pytest.mark.parametrize("case", CASES)
def test_corpus_case_is_diagnosed_as_its_mechanism(case, tmp_path):
    evidence, skipped = scan([str(CORPUS / case)])
    assert not skipped
    findings = rank(evidence)
    want = _expected(case)
    if want is None:
        assert findings == [], [f.mechanism.id for f in findings]
        return
    assert findings and findings[0].mechanism.id == want, [(f.mechanism.id, f.explained) for f in findings]
    if case.endswith(ALONE):
        assert [f.mechanism.id for f in findings] == [want]
    version = next(iter(evidence.versions), None)
    path = write(reproduction(findings[0], version, evidence.broker_conf), tmp_path)
    runs = load_scenarios(path)  # loads and lints like any scenario file
    assert runs and runs[0].name.startswith(f"diagnosed-{want}")
    based_on = next((name for suffix, name in SCENARIO.items() if case.endswith(suffix)), findings[0].mechanism.scenario)
    assert f"# Based on scenarios/{based_on}.yaml " in path.read_text()


@pytest.mark.parametrize("case", [c for c in CASES if (CORPUS / c / "slave" / "store.log").is_file()])
def test_the_puts_counted_are_the_masters(case):
    """diagnose cannot tell a master's store.log from a slave's and counts every [PAGECACHERT] line; the count is the
    master's all the same, because a slave's lines say TotalPut 0 (replication appends bypass putMessage): so on
    the real 4.9.1 and 5.3.0 and on the emulator, as this corpus recorded them."""
    both, _ = scan([str(CORPUS / case)])
    master, _ = scan([str(CORPUS / case / "master")])
    slave, _ = scan([str(CORPUS / case / "slave")])
    assert master.pagecache_puts > 0 and slave.pagecache_puts == 0
    assert (both.pagecache_puts, both.pagecache_fast_puts) == (master.pagecache_puts, master.pagecache_fast_puts)


def test_gzip_is_read_as_plain(tmp_path):
    case = CORPUS / "emulator-slave-readonly-default"
    for src in case.rglob("*"):
        if src.is_file():
            dst = tmp_path / src.relative_to(case)
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.with_name(dst.name + ".gz").write_bytes(gzip.compress(src.read_bytes()))
    plain, zipped = scan([str(case)])[0], scan([str(tmp_path)])[0]
    assert plain.total() and rank(zipped)[0].mechanism.id == "replication-stalled-slave"
    assert {k: plain.count(k) for k in plain.hits} == {k: zipped.count(k) for k in zipped.hits}


def _diagnose(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*RMQ_CHAOS, "diagnose", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})


def test_bad_input_is_one_line_each(tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "heap.bin").write_bytes(bytes(range(256)) * 64)
    text = "".join(f"2026-11-26 12:10:{i % 60:02d} WARN GroupTransferService - transfer messsage to slave timeout, "
                   f"{i}\n" for i in range(50000)).encode()
    packed = gzip.compress(text)
    (bad / "store.log.gz").write_bytes(packed[: len(packed) // 2])
    (bad / "not-gzip.gz").write_bytes(b"plain text, not gzip\n")
    os.mkfifo(bad / "fifo")
    (bad / "link").symlink_to(tmp_path / "nowhere")
    done = _diagnose(str(bad), str(tmp_path / "missing"), "--out", str(tmp_path / "out"), cwd=tmp_path)
    lines = done.stderr.splitlines()
    assert "Traceback" not in done.stderr
    for name in ("heap.bin", "store.log.gz", "not-gzip.gz", "fifo", "link", "missing"):
        assert sum(name in line for line in lines) == 1, (name, lines)
    assert all("allowed:" in line for line in lines), lines
    # the truncated gzip's first half is still read: the stalled slave is named from it
    assert done.returncode == 0, (done.returncode, done.stdout[-2000:])
    assert "replication-stalled-slave" in done.stdout
    only_bad = _diagnose(str(bad / "heap.bin"), str(tmp_path / "missing"), cwd=tmp_path)
    assert only_bad.returncode == 2 and "Traceback" not in only_bad.stderr
    healthy = _diagnose(str(CORPUS / "emulator-healthy"), "--no-scenario", cwd=tmp_path)
    assert healthy.returncode == 1 and "no known mechanism" in healthy.stdout
    assert not (tmp_path / "diagnosis").exists()


def test_a_directory_of_many_files(tmp_path):
    count = 100_000 if os.environ.get("RMQ_CHAOS_FULL_TESTS") == "1" else 3_000
    many = tmp_path / "many"
    many.mkdir()
    for i in range(count):
        (many / f"f{i:06d}.log").write_bytes(b"\0binary" if i % 2 else b"2026-11-26 12:00:00 INFO ok\n")
    done = _diagnose(str(many), "--no-scenario", cwd=tmp_path)
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) <= 21 and f"{count // 2 - 20} more files skipped: binary file" in lines[-1], lines[-3:]
    assert done.returncode == 1 and f"read {count // 2} file(s)" in done.stdout
    shutil.rmtree(many)


def test_the_users_version_and_broker_conf_go_into_the_scenario(tmp_path):
    evidence, _ = scan([str(CORPUS / "apache-slave-readonly-default")])
    conf = {"brokerName": "prod-a", "brokerRole": "SYNC_MASTER", "osPageCacheBusyTimeOutMills": "3000",
            "haSlaveFallbehindMax": "268435456", "mappedFileSizeCommitLog": "1073741824", "noSuchKey": "1",
            "storePathRootDir": "/data/rocketmq"}
    repro = reproduction(rank(evidence)[0], "4.9.3", conf)
    assert repro.used == {"brokerRole": "SYNC_MASTER", "osPageCacheBusyTimeOutMills": "3000",
                          "haSlaveFallbehindMax": "268435456"}
    assert set(repro.dropped) == {"brokerName", "mappedFileSizeCommitLog", "noSuchKey", "storePathRootDir"}
    (run,) = load_scenarios(write(repro, tmp_path))
    assert run.cluster.version == "4.9.3"
    assert run.cluster.broker.master["osPageCacheBusyTimeOutMills"] == "3000"
    assert "noSuchKey not used" in repro.text


def test_application_exceptions_name_page_cache_busy(tmp_path):
    """Lines written here in the shape of an application's log of the 4.9.1 client's exceptions (MQBrokerException's
    message is `CODE: <code>  DESC: <remark>`, the remark the broker's), with a slow [PAGECACHERT] minute: no run of
    ours writes an application log (its outcomes go to requests/*.parquet)."""
    desc = "broker busy, start flow control for a while, period in queue: 207ms, size of queue: 12"
    app = tmp_path / "app.log"
    app.write_text("".join(
        f"2026-11-26 10:00:{i:02d}.123 ERROR [http-nio-8080-exec-{i}] c.e.OrderService - send failed\n"
        f"org.apache.rocketmq.client.exception.MQBrokerException: CODE: 2  DESC: [TIMEOUT_CLEAN_QUEUE]{desc}\n"
        "\tat org.apache.rocketmq.client.impl.MQClientAPIImpl.processSendResponse(MQClientAPIImpl.java:665)\n"
        for i in range(5)) + "2026-11-26 10:00:07 ERROR x - CODE: 2  DESC: [PCBUSY_CLEAN_QUEUE]" + desc + "\n")
    evidence, _ = scan([str(app), str(CORPUS / "emulator-healthy" / "master")])
    findings = rank(evidence)
    assert findings[0].mechanism.id == "page-cache-busy" and findings[0].counts["timeout_clean_queue"] == 5
    assert evidence.hits["timeout_clean_queue"][str(app)].first_line == 2
    path = write(reproduction(findings[0], None, evidence.broker_conf), tmp_path / "out")
    names = [r.name for r in load_scenarios(path)]  # the shipped scenario's matrix: the pool on and off
    assert names == ["diagnosed-page-cache-busy.pool=on", "diagnosed-page-cache-busy.pool=off"]


def test_the_broker_conf_is_a_brokers_file(tmp_path):
    """Among a name server's, a controller's and a controller-mode broker's file (brokerRole=SLAVE, as all are),
    the broker's is read as the broker.conf."""
    (tmp_path / "namesrv.conf").write_text("listenPort=9876\n")
    (tmp_path / "controller-0.conf").write_text("controllerDLegerGroup=g\ncontrollerDLegerSelfId=n0\n")
    (tmp_path / "broker-0.conf").write_text("brokerName=broker-a\nbrokerRole=SLAVE\nenableControllerMode=true\n")
    evidence, _ = scan([str(tmp_path)])
    assert evidence.broker_conf_path == str(tmp_path / "broker-0.conf")
    (tmp_path / "broker-1.conf").write_text("brokerName=broker-a\nbrokerRole=SYNC_MASTER\n")
    evidence, _ = scan([str(tmp_path)])
    assert evidence.broker_conf_path == str(tmp_path / "broker-1.conf"), "a master's before a slave's"


def _flow_control_line(second: int, group: str, queue: int, min_offset: int) -> str:
    """A 4.9.1 client's flow-control line (ProcessQueue's cached message count), as rocketmq_client.log writes it."""
    return (f"2026-11-26 10:00:{second:02d},000 WARN RebalanceService - the cached message count exceeds the "
            f"threshold 1000, so do flow control, minOffset={min_offset}, maxOffset={min_offset + 1100}, count=1001, "
            f"size=0 MiB, pullRequest=PullRequest [consumerGroup={group}, messageQueue=MessageQueue [topic=T, "
            f"brokerName=broker-a, queueId={queue}], nextOffset={min_offset + 1101}], flowControlTimes=1\n")


def test_a_group_whose_oldest_message_moves_is_slow_not_stuck(tmp_path):
    """A blocked listener holds its queue's minOffset; a slow one (a backlog: master-killed-consumers' `slow`) moves
    it on. Only the first names stuck-consumer-listener."""
    log = tmp_path / "rocketmq_client.log"
    log.write_text("".join([_flow_control_line(1, "stuck", 0, 500), _flow_control_line(9, "stuck", 0, 500),
                            _flow_control_line(2, "slow", 1, 44), _flow_control_line(5, "slow", 1, 430),
                            _flow_control_line(3, "slow", 2, 780)]))
    evidence, _ = scan([str(log)])
    assert evidence.groups_in_flow_control == {"stuck"}
    assert (evidence.count("consumer_flow_control"), evidence.count("consumer_flow_control_moving")) == (2, 3)
    log.write_text(_flow_control_line(2, "slow", 1, 44) + _flow_control_line(5, "slow", 1, 430))
    evidence, _ = scan([str(log)])
    assert rank(evidence) == [] and evidence.count("consumer_flow_control_moving") == 2


def test_only_a_later_epochs_master_is_a_failover(tmp_path):
    """Every controller-mode cluster elects its first master in epoch 1 at its start (the real 5.3.0's store.log line
    below, from qualification.version=5.3.0-controller); a broker that becomes master in epoch 2 or later was
    elected by a failover."""
    log = tmp_path / "store.log"
    first = "2026-11-27 09:12:15 INFO main - Change ha to master success, newMasterEpoch:1, startOffset:0\n"
    log.write_text(first)
    assert rank(scan([str(log)])[0]) == []
    log.write_text(first + "2026-11-27 09:13:15 INFO x - Change ha to master success, newMasterEpoch:2, "
                           "startOffset:1048576\n")
    findings = rank(scan([str(log)])[0])
    assert [f.mechanism.id for f in findings] == ["controller-failover"] and findings[0].explained == 1


def test_only_a_shrinking_syncstateset_names_a_dropped_replica(tmp_path):
    """The master logs every SyncStateSet the controller accepts: its own at the start ([] to [1]) and a slave's
    return ([1] to [1, 2]) are healthy; a set that lost a broker ([1, 2] to [1]) is the slave dropped, and with the
    slave's read-only store it is the controller-mode case, not the 4.x stalled slave."""
    broker = tmp_path / "broker.log"
    grow = ("2026-11-27 05:01:02 INFO x - SyncStateSet changed from [] to [1]\n"
            "2026-11-27 05:01:12 INFO x - SyncStateSet changed from [1] to [1, 2]\n")
    broker.write_text(grow)
    assert rank(scan([str(broker)])[0]) == []
    broker.write_text(grow + "2026-11-27 05:02:19 INFO x - SyncStateSet changed from [1, 2] to [1]\n")
    (tmp_path / "store.log").write_text("2026-11-27 05:02:12 ERROR x - Failed to create file, Read-only file system\n")
    findings = rank(scan([str(tmp_path)])[0])
    assert [f.mechanism.id for f in findings] == ["in-sync-replica-dropped"], [f.mechanism.id for f in findings]
    assert findings[0].counts == {"syncstateset_shrunk": 1, "slave_store_readonly": 1}


def test_a_broker_that_cannot_read_its_epoch_file_names_the_dropped_replica(tmp_path):
    """A 5.x slave whose store failed may not start again: its epoch file is empty on disk and 5.3.0 exits reading
    it (the NumberFormatException propagates out of EpochFileCache.initCacheFromFile, which catches IOException
    only). That alone names the controller-mode case, whose scenario shows the exit."""
    (tmp_path / "stdout.log").write_text(
        "java.lang.NumberFormatException: Cannot parse null string\n"
        "\tat org.apache.rocketmq.common.utils.CheckpointFile.read(CheckpointFile.java:107)\n"
        "\tat org.apache.rocketmq.store.ha.autoswitch.EpochFileCache.initCacheFromFile(EpochFileCache.java:59)\n")
    findings = rank(scan([str(tmp_path)])[0])
    assert [f.mechanism.id for f in findings] == ["in-sync-replica-dropped"]
    assert findings[0].counts == {"epoch_file_unreadable": 1}


def _flush_thread(state: str, frame: str, name: str = "GroupCommitService") -> str:
    return (f'"{name}" #38 prio=5 os_prio=0 cpu=1741.90ms elapsed=36.23s tid=0x00007f03e86fee20 nid=0x87b runnable\n'
            f"   java.lang.Thread.State: {state}\n\tat {frame}\n"
            "\tat org.apache.rocketmq.store.MappedFile.flush(MappedFile.java:287)\n\n")


def test_only_a_flush_thread_in_msync_names_a_slow_disk(tmp_path):
    """A jstack of the master: the flush thread parked between flushes is healthy; RUNNABLE in msync (JDK 17's
    MappedMemoryUtils.force0, JDK 8's MappedByteBuffer.force0, FileChannel.force) is the flush under way, which on a
    slow disk is where every dump finds it (the real 4.9.1 throttled to 1 MiB/s: 20 of 22 dumps)."""
    dump = tmp_path / "jstack.txt"
    parked = _flush_thread("TIMED_WAITING (parking)", "jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)")
    dump.write_text("2026-11-27 10:40:45\nFull thread dump OpenJDK 64-Bit Server VM:\n\n" + parked)
    assert rank(scan([str(dump)])[0]) == []
    dump.write_text(parked + _flush_thread("RUNNABLE", "java.nio.MappedMemoryUtils.force0(Native Method)")
                    + _flush_thread("RUNNABLE", "java.nio.MappedByteBuffer.force0(Native Method)",
                                    "FlushRealTimeService")
                    + _flush_thread("RUNNABLE", "java.nio.MappedMemoryUtils.force0(Native Method)",
                                    "broker-a_GroupCommitService")  # 5.x in a broker container
                    + _flush_thread("RUNNABLE", "java.nio.MappedMemoryUtils.force0(Native Method)",
                                    "ReputMessageService"))  # not a commitlog flush thread
    findings = rank(scan([str(dump)])[0])
    assert [f.mechanism.id for f in findings] == ["store-flush-slow"]
    assert findings[0].counts == {"flush_thread_in_force": 3}


def test_a_gc_pause_names_swapping_only_when_long_and_mostly_in_the_kernel(tmp_path):
    """GC pauses' CPU times, JDK 17's unified log and JDK 8's PrintGCDetails (also with a decimal comma): a pause of
    50 ms or more whose kernel time exceeds its user time is the broker faulting its pages back from swap (the real
    4.9.1 in master-swapping: Sys 0.08-0.12 s against User 0.02-0.03 s); short pauses and busy ones are not."""
    gc = tmp_path / "rmq_broker_gc.log"
    healthy = ("[2026-11-27T10:43:16.175+0000][gc,cpu      ] GC(3) User=0.01s Sys=0.02s Real=0.02s\n"
               "[2026-11-27T10:43:17.175+0000][gc,cpu      ] GC(4) User=0.40s Sys=0.10s Real=0.30s\n"
               "2026-11-27T10:43:18.100+0800: [GC pause (G1 Evacuation Pause) (young) [Times: user=0.01 sys=0.00, "
               "real=0.01 secs]\n")
    gc.write_text(healthy)
    assert rank(scan([str(gc)])[0]) == []
    gc.write_text(healthy + "[2026-11-27T10:43:24.223+0000][gc,cpu      ] GC(5) User=0.03s Sys=0.08s Real=0.11s\n"
                  "2026-11-27T10:43:25.100+0800: [GC pause (G1 Evacuation Pause) (young) [Times: user=0.02 sys=0.15, "
                  "real=0.18 secs]\n"
                  "2026-11-27T10:43:26.100+0800: [GC pause (G1 Evacuation Pause) (young) [Times: user=0,02 sys=0,15, "
                  "real=0,18 secs]\n")
    findings = rank(scan([str(gc)])[0])
    assert [f.mechanism.id for f in findings] == ["broker-swapping"]
    assert findings[0].counts == {"gc_pause_in_kernel": 3}


def test_a_process_status_names_swapping_from_16_mib_in_swap_stamped_by_its_header(tmp_path):
    """`/proc/<pid>/status` snapshots (an operator's `grep ^Vm`, the run's logs/<node>/memory-status.log): VmSwap of
    16 MiB or more is a swapping broker, dated by the snapshot's stamped header; a few pages in swap are not."""
    status = tmp_path / "memory-status.log"
    little = ("2026-11-27 10:42:53,123 /proc/3461/status (java, master)\nVmRSS:\t  65168 kB\nVmSwap:\t   16383 kB\n\n"
              "VmSwap:\t 0 kB\n")
    status.write_text(little)
    assert rank(scan([str(status)])[0]) == []
    status.write_text(little + "2026-11-27 10:43:03,001 /proc/3461/status (java, master)\nVmRSS:\t   79656 kB\n"
                      "VmSwap:\t  327060 kB\n\n")
    evidence = scan([str(status)])[0]
    assert [f.mechanism.id for f in rank(evidence)] == ["broker-swapping"]
    hits = evidence.hits["process_swapped"][str(status)]
    assert (hits.count, hits.first_line, hits.first_ts) == (1, 8, "2026-11-27 10:43:03")


def _role_change(ts: str, broker_id: int, role: str, epoch: int) -> str:
    return (f"{ts} INFO ReplicasManager_ExecutorService_0 - Change broker [id:{broker_id}][address:10.0.0.{broker_id}:"
            f"10911] to {role}, newMasterBrokerId:{broker_id}, newMasterAddress:10.0.0.{broker_id}:10911, "
            f"newMasterEpoch:{epoch}, syncStateSetEpoch:{epoch + 2}\n")


def test_a_master_elected_from_outside_the_syncstateset_is_an_unclean_election(tmp_path):
    """5.x controller mode, each broker's broker.log in its own directory: broker 2 becoming master in epoch 2 after
    the master's last set was [1] is unclean (the reproduction: unclean-election's "on" variant alone); after the set
    grew back to [1, 2], or the old master itself elected again, it is not, and a slave elected within 15 s of
    rejoining the set it had left is #5663's moment (syncstateset-expansion-race). The set a new master logs for itself
    (`from [] to [2]`) and a change in the same second as the election are not the old master's report."""
    old, new = tmp_path / "broker-0", tmp_path / "broker-1"
    old.mkdir(), new.mkdir()
    shrink = "2026-11-27 13:37:18 INFO AutoSwitchHAService_Executor_1 - SyncStateSet changed from [1, 2] to [1]\n"
    grown = "2026-11-27 13:37:20 INFO AutoSwitchHAService_Executor_1 - SyncStateSet changed from [1] to [1, 2]\n"
    own = "2026-11-27 13:37:23 INFO AdminBrokerThread_12 - SyncStateSet changed from [] to [2]\n"

    def findings(old_log: str, new_log: str) -> list[str]:
        (old / "broker.log").write_text(_role_change("2026-11-27 13:36:38", 1, "SYNC_MASTER", 1) + old_log)
        (new / "broker.log").write_text(new_log)
        return [f.mechanism.id for f in rank(scan([str(tmp_path)])[0])]

    elected = own + _role_change("2026-11-27 13:37:23", 2, "SYNC_MASTER", 2)
    assert findings(shrink, elected)[0] == "controller-unclean-election"
    assert findings(shrink + grown, elected)[0] == "syncstateset-expansion-race"  # back in 3 s before: #5663
    assert "syncstateset-expansion-race" not in findings(  # back in the set 18 s before
        shrink.replace("13:37:18", "13:36:50") + grown.replace("13:37:20", "13:37:05"), elected)
    assert findings(grown, elected) == []  # the slave's first join (it never left the set): nothing judged
    assert "controller-unclean-election" not in findings(shrink.replace("13:37:18", "13:37:23"), elected)
    assert "controller-unclean-election" not in findings(
        shrink + _role_change("2026-11-27 13:38:01", 1, "SYNC_MASTER", 2), "")
    (old / "broker.log").write_text(shrink)
    (new / "broker.log").write_text(elected)
    first = rank(scan([str(tmp_path)])[0])[0]
    assert first.counts["controller_unclean_master"] == 1
    (run,) = load_scenarios(write(reproduction(first, None, {}), tmp_path / "out"))
    assert run.name.endswith("unclean=on"), run.name


def test_an_async_flush_broker_conf_is_reproduced_by_the_async_scenario():
    """The late acknowledgements of master-disk-throttle are SYNC_FLUSH's: a broker.conf with ASYNC_FLUSH is
    reproduced by master-disk-throttle-async, whose expectations say what an ASYNC_FLUSH master does instead."""
    from harness.diagnose.mechanisms import BY_ID

    mech = BY_ID["store-flush-slow"]
    assert mech.scenario_for({"flushDiskType": "SYNC_FLUSH"}) == ("master-disk-throttle", None)
    assert mech.scenario_for({})[0] == "master-disk-throttle"
    assert mech.scenario_for({"flushDiskType": "ASYNC_FLUSH"})[0] == "master-disk-throttle-async"


def test_a_name_servers_idle_close_names_expiry_only_for_a_broker(tmp_path):
    """The real 4.9.1 name server cut off from its brokers closed their connections at 120 s of silence (Netty's idle
    handler) and dropped them from the routes as channels destroyed, before its scan found them expired: that is the
    brokers' expiry, not a dead master. A client's idle connection is closed the same way and names nothing."""
    log = tmp_path / "namesrv.log"
    client = ("2026-11-27 19:31:41 WARN NettyServerCodecThread_3 - NETTY SERVER PIPELINE: IDLE exception "
              "[10.165.0.13:40182]\n"
              "2026-11-27 19:31:41 INFO NettyServerNIOSelector_3_1 - closeChannel: close the connection to remote "
              "address[10.165.0.13:40182] result: true\n")
    log.write_text(client)
    assert rank(scan([str(log)])[0]) == []
    log.write_text(
        "2026-11-27 19:31:37 WARN NettyServerCodecThread_2 - NETTY SERVER PIPELINE: IDLE exception [10.165.0.11:40342]\n"
        "2026-11-27 19:31:37 INFO NettyServerNIOSelector_3_2 - closeChannel: close the connection to remote "
        "address[10.165.0.11:40342] result: true\n"
        "2026-11-27 19:31:37 INFO NettyEventExecutor - the broker's channel destroyed, 10.165.0.11:29475, clean it's "
        "data structure at once\n"
        "2026-11-27 19:31:37 INFO NettyEventExecutor - remove brokerAddr[0, 10.165.0.11:29475] from brokerAddrTable, "
        "because channel destroyed\n" + client)
    findings = rank(scan([str(log)])[0])
    assert [f.mechanism.id for f in findings] == ["brokers-expired"], [(f.mechanism.id, f.counts) for f in findings]
    assert findings[0].counts == {"namesrv_broker_idle": 1, "namesrv_master_removed": 1}


def test_a_master_elected_under_consumer_groups_answers_with_its_last_offset_sync(tmp_path):
    """A broker elected in epoch 2 while an application's consumer group was connected holds the offsets it last
    synced as a slave: its last `Update slave consumer offset from master` before the election is the evidence
    (controller-failover-offsets; the reproduction: master-killed-controller-consumers). Without such a group before
    the election (none, a later one, or mqadmin's own), or with no sync before it in the new master's own logs, it is
    a plain failover."""
    old, new = tmp_path / "broker-0", tmp_path / "broker-1"
    old.mkdir(), new.mkdir()
    connected = ("2026-11-27 13:36:40 INFO ClientManageThread_3 - new consumer connected, group: {} CONSUME_PASSIVELY "
                 "CLUSTERING channel: ClientChannelInfo [channel=[id: 0x1], clientId=10.0.0.9@1, language=JAVA]\n")
    synced = "{} INFO BrokerControllerScheduledThread1 - Update slave consumer offset from master, 10.0.0.1:10911\n"
    elected = _role_change("2026-11-27 13:37:23", 2, "SYNC_MASTER", 2)

    def first(old_log: str, new_log: str) -> tuple[str, dict[str, int]]:
        (old / "broker.log").write_text(_role_change("2026-11-27 13:36:38", 1, "SYNC_MASTER", 1) + old_log)
        (new / "broker.log").write_text(new_log)
        (new / "store.log").write_text("2026-11-27 13:37:23 INFO x - Change ha to master success, newMasterEpoch:2, "
                                       "startOffset:1048576\n")
        top = rank(scan([str(tmp_path)])[0])[0]
        return top.mechanism.id, top.counts

    syncs = synced.format("2026-11-27 13:36:51") + synced.format("2026-11-27 13:37:04")
    mech, counts = first(connected.format("app"), syncs + elected + synced.format("2026-11-27 13:37:50"))
    assert mech == "controller-failover-offsets" and counts == {"controller_offsets_behind": 1,
                                                                 "controller_new_master": 1}
    evidence = scan([str(tmp_path)])[0].hits["controller_offsets_behind"]
    assert [(h.path, h.first_line) for h in evidence.values()] == [(str(new / "broker.log"), 2)]  # the last before
    assert first(connected.format("TOOLS_CONSUMER"), syncs + elected)[0] == "controller-failover"
    assert first(connected.format("app").replace("13:36:40", "13:38:00"), syncs + elected)[0] == "controller-failover"
    assert first(connected.format("app") + syncs, elected)[0] == "controller-failover"  # the old master's own syncs
    (old / "broker.log").write_text(connected.format("app"))
    (new / "broker.log").write_text(syncs + elected)
    written = write(reproduction(rank(scan([str(tmp_path)])[0])[0], None, {}), tmp_path / "out")
    (run,) = load_scenarios(written)
    assert run.name == "diagnosed-controller-failover-offsets" and "offset_rewind" in written.read_text()
