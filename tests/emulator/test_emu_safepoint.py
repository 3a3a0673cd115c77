"""The JVM-like safepoint of a broker process (`emulator.safepoint`) against a real frozen store: a copy into a mapped
file stuck in a page fault keeps the safepoint from being reached, threads at their polls wait with it, a thread
blocked in a plain file write (native code to a JVM) does not hold it up, and after the thaw the thread that kept it
waiting runs to its next poll before the others go on."""
from __future__ import annotations

import os
import subprocess
import threading
import time

import pytest
from waiting import poll

from emulator import safepoint
from emulator.safepoint import VM_STATE
from emulator.store.mapped_file import MappedFile
from faults.journal import Journal
from harness.resources.loop_store import LoopStore

pytestmark = pytest.mark.root
FILE_SIZE = 1 << 20
FROZEN_S = 1.0


@pytest.fixture
def store_file(tmp_path):
    """A mapped store file with clean pages (flushed) on its own loop-mounted ext4; thawed and removed at the end."""
    if os.geteuid() != 0:
        pytest.skip("needs root (loop mount, fsfreeze)")
    store = LoopStore.create(Journal(tmp_path / "state"), str(tmp_path / "s.img"), str(tmp_path / "mnt"), 32 << 20)
    mf = MappedFile(os.path.join(store.mount, f"{0:020d}"), FILE_SIZE)
    try:
        mf.put(b"a" * 8192)
        mf.flush()  # the next write into these pages must fault (page_mkwrite) and wait for a thaw
        yield store, mf
    finally:
        subprocess.run(["fsfreeze", "-u", store.mount], capture_output=True)
        mf.close()
        store.destroy()


def _thread(fn) -> threading.Thread:
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    return t


def _stuck_in_copy(mf: MappedFile, order: list[str]) -> threading.Thread:
    def copier() -> None:
        mf.mapping.write(0, b"b" * 4096)
        order.append("copier")
        VM_STATE.poll()

    t = _thread(copier)
    poll(lambda: VM_STATE._copying == 1, 5, "the copier inside its copy")
    return t


def test_copy_stuck_on_a_frozen_page_holds_the_safepoint(store_file, monkeypatch):
    store, mf = store_file
    monkeypatch.setattr(safepoint, "LATE_LEAD_S", 30.0)  # the order below must not depend on this machine's speed
    subprocess.run(["fsfreeze", "-f", store.mount], check=True)
    order: list[str] = []
    copier = _stuck_in_copy(mf, order)
    file_writer = _thread(lambda: mf.append_by_file_write(b"c" * 4096))  # blocked in native code: safe
    reaching: list[int] = []
    vm = _thread(lambda: reaching.append(VM_STATE.synchronize("Cleanup")))
    poll(lambda: VM_STATE.pending, 5, "the safepoint requested")

    def poller() -> None:
        VM_STATE.poll()
        order.append("poller")

    polling = _thread(poller)
    time.sleep(FROZEN_S)  # the frozen span whose length the safepoint must report (not a synchronisation)
    assert VM_STATE.pending and not reaching and not order, "nothing passes the safepoint while the copy is stuck"
    subprocess.run(["fsfreeze", "-u", store.mount], check=True)
    for t in (vm, copier, polling, file_writer):
        t.join(10)
        assert not t.is_alive()
    assert reaching[0] >= FROZEN_S * 1e9, "the time to safepoint covers the frozen span"
    assert order == ["copier", "poller"], "the thread the safepoint waited for went on first"
    assert mf.read(0, 4) == b"bbbb"


def test_safepoint_is_reached_at_once_when_no_copy_is_stuck(store_file):
    store, _ = store_file
    fd = os.open(os.path.join(store.mount, "x"), os.O_WRONLY | os.O_CREAT)  # created before the freeze
    subprocess.run(["fsfreeze", "-f", store.mount], check=True)
    try:
        blocked = _thread(lambda: os.pwrite(fd, b"x", 0))
        reaching = VM_STATE.synchronize("Cleanup")
        assert reaching < FROZEN_S * 1e9 and not VM_STATE.pending, "a thread blocked in a file write is at a safepoint"
        subprocess.run(["fsfreeze", "-u", store.mount], check=True)
        blocked.join(10)
    finally:
        os.close(fd)
