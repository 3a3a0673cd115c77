"""What the control node does with a run directory once the run has ended (`run_end` written, every writer
stopped): compact its part files (`analysis.contract.compact`; the analysis pays per file), then the analysis in a
child process (`rmq-chaos report RUN_DIR`; Spark stays out of the runner's process), whose exit code is the
verdict."""
from __future__ import annotations

import subprocess
import sys
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


def analyze(root: Path, verdict: Path, completed: bool, say: Say) -> int:
    """The report's exit code (0 held, 1 failed, 2 unknown); never 0 for a run that did not complete."""
    verdict.unlink(missing_ok=True)
    code = subprocess.run([sys.executable, "-m", "harness.cli", "report", str(root)], check=False).returncode
    if not verdict.exists():
        say(f"the analysis wrote no verdict (exit {code}): the run's verdict is unknown", "red")
        return EXIT_UNKNOWN
    if not completed and code == 0:
        return EXIT_UNKNOWN
    return code
