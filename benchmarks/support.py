"""What several benchmarks share: the repository on `sys.path` (a benchmark runs as a script, `python
benchmarks/<name>.py`, so this module is imported as `support` before the project's packages), the CPU seconds of
processes, the root check of the benchmarks that make OS resources, and the scripted broker of the load benchmarks
(`tests/loads/scripted_broker.py --no-record`, in its own process so it does not share the generator's core
accounting)."""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def cpu_seconds(pids: list[int], *, skip_gone: bool = False) -> float:
    """User + system CPU seconds of the processes `pids`; with `skip_gone`, a process that has ended counts 0."""
    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.NoSuchProcess:
            if not skip_gone:
                raise
            continue
        total += t.user + t.system
    return total


def pct(values: list[float], q: float) -> float:
    """The `q` quantile (0..1) of `values`, nearest rank."""
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def not_root(program: str, needs: str = "") -> bool:
    """True, after saying `<program>: needs root (<needs>)` on stderr, when this process does not run as root."""
    if os.geteuid() == 0:
        return False
    print(f"{program}: needs root" + (f" ({needs})" if needs else ""), file=sys.stderr)
    return True


@contextmanager
def scripted_broker() -> Iterator[tuple[str, subprocess.Popen]]:
    """A scripted name server + broker that acks every send at once, recording nothing: its address and process."""
    broker = subprocess.Popen([sys.executable, str(REPO / "tests/loads/scripted_broker.py"), "--no-record"],
                              stdout=subprocess.PIPE, text=True)
    try:
        yield broker.stdout.readline().split()[1], broker
    finally:
        broker.terminate()
        broker.wait(10)
