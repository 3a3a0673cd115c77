"""A memory footprint shaped like the broker JVM's: `HEAP_OPTS` / `JAVA_OPT_EXT` (`-Xms`, `-Xmx`, `-Xmn`, as the
official image passes them) size an anonymous heap that is touched at start (AlwaysPreTouch) and an eden inside it
that every request's body is copied into, slot after slot. Under a memory cgroup limit these pages are swapped out
and faulted back in by the request threads, one thread at a time, as a JVM's are (the copy releases the GIL).
A full eden is a young collection: a safepoint operation (`emulator.safepoint`) that waits for every copy in
progress, as G1's `G1CollectForAllocation` does."""
from __future__ import annotations

import os
import re

from emulator.logs import broker_log
from emulator.safepoint import VM_STATE
from emulator.store.native import Mapping, memset

ENV_KEYS = ("HEAP_OPTS", "JAVA_OPT_EXT")
DEFAULT_OPTS = "-Xms128m -Xmx128m -Xmn64m"
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_FLAG = re.compile(r"-Xm([sxn])(\d+)([kKmMgGtT]?)\b")


def parse_sizes(text: str) -> dict[str, int]:
    """{'s': bytes, 'x': bytes, 'n': bytes} from JVM options; later flags win, as in the JVM."""
    out: dict[str, int] = {}
    for kind, number, unit in _FLAG.findall(text):
        out[kind] = int(number) * _UNITS[unit.lower()]
    return out


class JvmMemory:
    def __init__(self, environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        sizes = parse_sizes(DEFAULT_OPTS)
        for key in ENV_KEYS:
            sizes.update(parse_sizes(env.get(key, "")))
        self.heap_size = max(sizes["x"], sizes.get("s", 0))
        self.initial = min(sizes.get("s", self.heap_size), self.heap_size)
        self.eden_size = min(sizes.get("n", self.heap_size // 3), self.heap_size)
        self.heap = Mapping(-1, self.heap_size)
        self._pos = 0

    def pre_touch(self) -> None:
        """AlwaysPreTouch: write every page of the initial heap."""
        memset(self.heap.addr, 0, self.initial)
        broker_log.info("heap %d bytes (initial %d touched), eden %d bytes", self.heap_size, self.initial,
                        self.eden_size)

    def allocate(self, data: bytes) -> None:
        """Copy `data` into the next eden slot (a young-generation allocation); a full eden is collected first (a
        safepoint operation) and filling starts again at its beginning."""
        n = len(data)
        if n == 0 or n > self.eden_size:
            return
        pos = self._pos
        if pos + n > self.eden_size:
            VM_STATE.synchronize("G1CollectForAllocation")
            pos = 0
        self._pos = pos + n
        self.heap.write(pos, data)
