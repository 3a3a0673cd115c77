"""The emulator's thread dump (its answer to SIGQUIT, as HotSpot's): a thread inside a marked native call (a flush's
fdatasync) is RUNNABLE in the JVM's frame for it, a thread waiting on an event is TIMED_WAITING, every thread is
listed under its name; `rmq-chaos diagnose` reads the dump as it reads a jstack of the real broker. A broker process
that gets SIGQUIT prints the dump on its stdout and goes on serving."""
from __future__ import annotations

import signal
import threading

import pytest
from waiting import poll

from emulator.thread_dump import MSYNC_FRAME, dump_text, native_call
from harness.diagnose import rank, scan


def _in_thread(name: str, body) -> tuple[threading.Thread, threading.Event, threading.Event]:
    entered, release = threading.Event(), threading.Event()

    def run() -> None:
        body(entered, release)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    assert entered.wait(10)
    return thread, entered, release


def test_a_thread_in_a_flush_is_runnable_in_msync_and_diagnose_reads_it(tmp_path):
    def flushing(entered, release):
        with native_call(MSYNC_FRAME):
            entered.set()
            release.wait(30)

    def parked(entered, release):
        entered.set()
        release.wait(30)

    flusher, _, release_flush = _in_thread("GroupCommitService", flushing)
    waiter, _, release_wait = _in_thread("FlushConsumeQueueService", parked)
    try:
        text = dump_text()
    finally:
        release_flush.set()
        release_wait.set()
        flusher.join(10)
        waiter.join(10)
    stanzas = {s.split('"')[1]: s for s in text.split("\n\n") if s.startswith('"')}
    assert "java.lang.Thread.State: RUNNABLE\n\tat " + MSYNC_FRAME in stanzas["GroupCommitService"]
    assert "java.lang.Thread.State: TIMED_WAITING (parking)" in stanzas["FlushConsumeQueueService"]
    assert "MainThread" in stanzas
    (tmp_path / "stdout.log").write_text(text)
    findings = rank(scan([str(tmp_path)])[0])
    assert [f.mechanism.id for f in findings] == ["store-flush-slow"]
    assert findings[0].counts == {"flush_thread_in_force": 1}


@pytest.mark.root
def test_a_broker_process_answers_sigquit_and_goes_on(emu_cluster):
    """The master's process prints a dump per SIGQUIT on its stdout, each after a `PrintThreads` safepoint in its GC
    log, and goes on serving (SIGQUIT's default would have ended it)."""
    cluster = emu_cluster()
    master = cluster.master
    for n in (1, 2):
        master.proc.send_signal(signal.SIGQUIT)
        poll(lambda n=n: master.log("stdout.log").count("Full thread dump") >= n, 30, f"dump {n}")
    assert master.proc.poll() is None
    text = master.log("stdout.log")
    assert '"GroupCommitService"' in text and '"ReputMessageService"' in text, text[-2000:]
    assert master.log("gc.log").count('Safepoint "PrintThreads"') == 2
    cluster.create_topic("DumpTopic", 1)  # still serving
