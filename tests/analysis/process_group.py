"""Run a command in its own process group and end the whole group (by its id) when it is done or times out, so a
test never leaves a JVM, a Python worker or a Chromium helper behind."""
from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence


def run_group(cmd: Sequence[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the group we created: the command and whatever it started
        except ProcessLookupError:
            pass
        if proc.returncode is None:
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
