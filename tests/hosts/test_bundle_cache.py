"""The harness bundle sent to hosts (`harness.hosts.bundle`) is built once per content into a cache shared by every
run on the control node: runs started together build it together, each through a temporary file of its own, and
every one of them gets the same complete tar (a shared temporary name made one of two runs fail with
FileNotFoundError)."""
from __future__ import annotations

import tarfile
import threading
from pathlib import Path

from harness.hosts import bundle


def test_builds_started_together_all_get_the_one_complete_tar(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(bundle, "CACHE", tmp_path)
    start, results, errors = threading.Barrier(4), [], []

    def build() -> None:
        start.wait()
        try:
            results.append(bundle.build_bundle())
        except Exception as e:  # noqa: BLE001 - the assertion below names it
            errors.append(e)

    threads = [threading.Thread(target=build) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len({b.path for b in results}) == 1 and [p.name for p in tmp_path.iterdir()] == [results[0].path.name]
    with tarfile.open(results[0].path) as tar:
        assert bundle.MARKER in tar.getnames()
