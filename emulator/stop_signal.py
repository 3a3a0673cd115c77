"""What the programs share at start and stop: a server that cannot listen ends the program with one line, and
SIGTERM or SIGINT sets an event the main thread waits on (then it shuts down in order, as the JVM's shutdown hooks
do)."""
from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable


def stop_on_signals() -> threading.Event:
    """An event set by the first SIGTERM or SIGINT (call from the main thread)."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    return stop


def listening(program: str, addr: str, start: Callable[[], None]) -> bool:
    """`start()`; False, after `<program>: cannot listen on <addr>: <error>` on stderr, when it raises OSError."""
    try:
        start()
    except OSError as e:
        print(f"{program}: cannot listen on {addr}: {e}", file=sys.stderr)
        return False
    return True
