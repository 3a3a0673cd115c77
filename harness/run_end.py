"""What the control node does with a run directory once the run has ended (`run_end` written, every writer
stopped): compact its part files (`analysis.contract.compact`; the analysis pays per file), then the analysis in a
child process (`rmq-chaos report RUN_DIR`; Spark stays out of the runner's process, in a session of its own), whose
exit code is the verdict."""
from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

EXIT_UNKNOWN = 2
Say = Callable[..., None]


def compact_parts(root: Path, say: Say) -> None:
    """Merge the run's part files; a failure (a full disk) leaves them as written, said in one yellow line."""
    from analysis.contract.compact import compact_run
    from analysis.contract.schemas import PART_SCHEMAS

    t0 = time.monotonic()
    try:
        done = compact_run(root, PART_SCHEMAS)
    except Exception as err:  # noqa: BLE001 - the parts as written are still whole and readable
        say(f"part files not compacted ({type(err).__name__}: {err}); the analysis reads them as written", "yellow")
        return
    if done:
        say(f"part files: {sum(d.sources for d in done)} compacted into {sum(len(d.files) for d in done)} in "
            f"{time.monotonic() - t0:.1f} s")


def report(argv: list[str], **kw) -> tuple[int, str | None]:
    """`rmq-chaos report ARGV` in a child process of its own session: (its exit code, the signal that interrupted
    it or None). A Ctrl-C or SIGTERM meant for the harness is handed to the child (which stops its Spark job and
    says so in one line; a second one stops it at once) instead of ending this process in the middle of waiting."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "report", *argv], start_new_session=True, **kw)
    got: list[str] = []

    def forward(signum: int, _frame: object) -> None:
        got.append(signal.Signals(signum).name)
        proc.send_signal(signum)

    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = proc.wait()
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    return code, (got[0] if got else None)


def analyze(root: Path, verdict: Path, completed: bool, say: Say) -> tuple[int, str | None]:
    """The report's exit code (0 held, 1 failed, 2 unknown; never 0 for a run that did not complete), and the
    signal that interrupted the analysis, if one did (the verdict is then unknown)."""
    verdict.unlink(missing_ok=True)
    code, interrupted = report([str(root)])
    if interrupted:
        say(f"{interrupted}: the analysis was stopped; the run's verdict is unknown (`rmq-chaos report {root}` "
            f"analyzes it again)", "red")
        return EXIT_UNKNOWN, interrupted
    if not verdict.exists():
        say(f"the analysis wrote no verdict (exit {code}): the run's verdict is unknown", "red")
        return EXIT_UNKNOWN, None
    if not completed and code == 0:
        return EXIT_UNKNOWN, None
    return code, None
