"""The README's test command runs the tests side by side (`-n 4 --dist loadgroup`) and relies on pytest-xdist to
keep the tests that use what the machine has once (tests/conftest.py MACHINE_WIDE) on one worker. Checked through
a real pytest-xdist run of a few quick compose tests: every one of them ran on the same worker (a pytest or xdist
release that stops honouring `xdist_group` fails here instead of in a run where two tests share swap or dockerd)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_the_machine_wide_tests_share_one_worker() -> None:
    out = subprocess.run([sys.executable, "-m", "pytest", "-n", "4", "--dist", "loadgroup", "-v", "-p",
                          "no:cacheprovider", "tests/compose/test_compose_files.py"], cwd=REPO, capture_output=True,
                         text=True, timeout=300).stdout
    workers = re.findall(r"^\[(gw\d+)\] .*PASSED tests/compose/", out, re.M)
    assert len(workers) >= 4, out[-2000:]
    assert len(set(workers)) == 1, out[-2000:]
