"""HotSpot's answer to SIGQUIT (`kill -3`, what `jstack` also asks for): a thread dump on stdout, taken at a safepoint
(`Safepoint "PrintThreads"` in the GC log), the process going on afterwards.

The emulator's threads carry their Java counterparts' names (`GroupCommitService`, `FlushRealTimeService`, ...), so
the dump lists them under those names. A thread inside a native call the emulator marks (`native_call`: a flush's
fdatasync, which the JVM makes as msync in `MappedMemoryUtils.force0`) is shown as HotSpot shows a thread in native
code, RUNNABLE with that frame on top; any other thread as TIMED_WAITING when its innermost Python frame is a wait
(a condition's or event's wait, a lock's acquire, a selector's select, a queue's get) and RUNNABLE otherwise, with
its Python frames below. The header says the dump is the
emulator's, so nobody takes it for a JVM's. `rmq-chaos` sends SIGQUIT to the brokers while a fault is on
(`harness.collectors.thread_dumps`), and `rmq-chaos diagnose` reads the dumps as it reads jstack output.
"""
from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from emulator.safepoint import VM_STATE

MSYNC_FRAME = "java.nio.MappedMemoryUtils.force0(java.base/Native Method)"
"""Where HotSpot (JDK 9+) shows a thread forcing a mapped file to disk."""
FILE_FORCE_FRAME = "sun.nio.ch.FileDispatcherImpl.force0(java.base/Native Method)"
"""... and one forcing a file channel (a commitlog file written through a transient store pool buffer)."""
WAITING_FUNCTIONS = frozenset({"wait", "sleep", "acquire", "select", "poll", "get", "join", "_wait_for_tstate_lock"})
MAX_FRAMES = 12

_native: dict[int, str] = {}


@contextmanager
def native_call(frame: str) -> Iterator[None]:
    """Mark this thread as in the native method `frame` (as a JVM frame) while the block runs."""
    ident = threading.get_ident()
    _native[ident] = frame
    try:
        yield
    finally:
        _native.pop(ident, None)


def _stanza(thread: threading.Thread, frame: FrameType | None) -> str:
    native = _native.get(thread.ident or 0)
    waiting = not native and frame is not None and frame.f_code.co_name in WAITING_FUNCTIONS
    lines = [f'"{thread.name}" #{thread.native_id or 0}{" daemon" if thread.daemon else ""} prio=5 '
             f"tid=0x{thread.ident or 0:016x} nid=0x{thread.native_id or 0:x} "
             f"{'waiting on condition' if waiting else 'runnable'}",
             f"   java.lang.Thread.State: {'TIMED_WAITING (parking)' if waiting else 'RUNNABLE'}"]
    if native:
        lines.append(f"\tat {native}")
    depth = 0
    while frame is not None and depth < MAX_FRAMES:
        code = frame.f_code
        module = frame.f_globals.get("__name__", "?")
        lines.append(f"\tat {module}.{code.co_qualname}({code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno})")
        frame, depth = frame.f_back, depth + 1
    return "\n".join(lines) + "\n\n"


def dump_text() -> str:
    """The dump of every live thread, HotSpot's layout."""
    frames = sys._current_frames()
    head = (f"{time.strftime('%Y-%m-%d %H:%M:%S')}\n"
            f"Full thread dump rmq-chaos emulator (Python {sys.version.split()[0]}; threads named as the broker's):\n\n")
    return head + "".join(_stanza(t, frames.get(t.ident or 0)) for t in threading.enumerate())


def _print_threads() -> None:
    text = dump_text()
    sys.stdout.write(text)
    sys.stdout.flush()


def _dispatch() -> None:
    VM_STATE.synchronize("PrintThreads", _print_threads)


def answer_sigquit() -> None:
    """Install the SIGQUIT handler (from the main thread): each signal starts a `Signal Dispatcher` thread that takes
    the dump at a safepoint, so a thread stuck in a mapped-page copy delays the dump as it delays the JVM's."""
    def handler(_signum: int, _frame: object) -> None:
        threading.Thread(target=_dispatch, name="Signal Dispatcher", daemon=True).start()

    signal.signal(signal.SIGQUIT, handler)
