"""The scan for our processes' tag (`faults.system.procs.tagged`, what `kill_procs` undo ops and cleanup use to find
a node's children) with a process on the machine blocked in D state: a child of this test with a thread faulting on
a page of a file mapped from a frozen filesystem. The scan sees the thread blocked (`_blocked`), reads that
process's environment with a bound instead of a plain read that could wait as long as the filesystem stays frozen,
and still finds it by its tag; after the thaw the thread finishes."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from waiting import poll

from faults.journal import Journal
from faults.system import procs
from harness.resources.loop_store import LoopStore

pytestmark = pytest.mark.root
CHILD = textwrap.dedent("""
    import ctypes, mmap, os, sys, threading
    with open(sys.argv[1], "wb") as f:
        f.write(b"a" * (1 << 20)); f.flush(); os.fsync(f.fileno())
    m = mmap.mmap(os.open(sys.argv[1], os.O_RDWR), 1 << 20)
    m[0]  # mapped in, clean: the next write faults (page_mkwrite) and waits for the thaw
    print("ready", flush=True)
    sys.stdin.readline()
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    threading.Thread(target=lambda: (ctypes.memset(addr, 98, 1), print("written", flush=True))).start()
    sys.stdin.readline()
""")


@pytest.fixture
def store(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root (loop mount, fsfreeze)")
    s = LoopStore.create(Journal(tmp_path / "state"), str(tmp_path / "s.img"), str(tmp_path / "mnt"), 32 << 20)
    try:
        yield s
    finally:
        subprocess.run(["fsfreeze", "-u", s.mount], capture_output=True)
        s.destroy()


def test_a_process_blocked_on_a_frozen_store_is_found_by_its_tag(store, tmp_path):
    tag = f"t-blocked-{os.getpid()}"
    child = subprocess.Popen([sys.executable, "-c", CHILD, os.path.join(store.mount, "f")], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env={**os.environ, procs.TAG_ENV: tag})
    try:
        assert child.stdout.readline() == b"ready\n"
        subprocess.run(["fsfreeze", "-f", store.mount], check=True)
        child.stdin.write(b"go\n")
        child.stdin.flush()
        poll(lambda: procs._blocked(child.pid), 10, "the child's writer to block in D state")
        assert [p.pid for p in procs.tagged(tag)] == [child.pid]
        assert procs.tag_of(child.pid) == tag
        subprocess.run(["fsfreeze", "-u", store.mount], check=True)
        assert child.stdout.readline() == b"written\n"
        poll(lambda: not procs._blocked(child.pid), 10, "the writer to finish after the thaw")
    finally:
        subprocess.run(["fsfreeze", "-u", store.mount], capture_output=True)
        child.kill()
        child.wait()
