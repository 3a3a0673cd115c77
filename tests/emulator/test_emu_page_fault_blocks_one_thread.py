"""A write into a mapped store file that faults on a frozen filesystem blocks only the thread that touches the page:
the copy is a ctypes foreign call that releases the GIL, as a JVM thread blocks alone. Measured: another thread keeps
counting while the writer is stuck, and the writer finishes once the store is thawed."""
from __future__ import annotations

import os
import subprocess
import threading
import time

import pytest
from waiting import poll

from emulator.store.mapped_file import MappedFile
from faults.journal import Journal
from harness.resources.loop_store import LoopStore

pytestmark = pytest.mark.root
FILE_SIZE = 1 << 20


@pytest.fixture
def frozen_store(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root (loop mount, fsfreeze)")
    store = LoopStore.create(Journal(tmp_path / "state"), str(tmp_path / "s.img"), str(tmp_path / "mnt"), 32 << 20)
    try:
        yield store
    finally:
        subprocess.run(["fsfreeze", "-u", store.mount], capture_output=True)
        store.destroy()


@pytest.mark.parametrize("path", ["mapping", "file_write"])
def test_blocked_page_fault_leaves_other_threads_running(frozen_store, path):
    mf = MappedFile(os.path.join(frozen_store.mount, f"{0:020d}"), FILE_SIZE)
    mf.put(b"a" * 4096)
    mf.flush()  # clean pages: the next write into them must fault (page_mkwrite) and wait for the thaw
    subprocess.run(["fsfreeze", "-f", frozen_store.mount], check=True)
    done = threading.Event()

    def writer() -> None:
        if path == "mapping":
            mf.mapping.write(0, b"b" * 4096)
        else:
            mf.append_by_file_write(b"c" * 4096)
        done.set()

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    counted = 0
    until = time.monotonic() + 1.0
    while time.monotonic() < until:
        counted += 1
    assert not done.is_set(), "the write did not block on the frozen store"
    assert counted > 10_000, f"the main thread was starved while the writer was blocked ({counted} iterations)"
    subprocess.run(["fsfreeze", "-u", frozen_store.mount], check=True)
    poll(done.is_set, 10, "the write to finish after the thaw")
    mf.close()
