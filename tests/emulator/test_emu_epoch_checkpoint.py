"""The epoch file as 5.3.0 writes and reads it (`emulator.autoswitch.checkpoint_file`): the old content goes to
`.bak`; a count or CRC that does not match falls back to `.bak`; an empty file (what ext4 left of a first epoch file
whose store turned read-only before its delayed data was written) stops the broker's start with Java's
NumberFormatException, and the broker process exits with 255 as BrokerStartup does."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from emulator.autoswitch import checkpoint_file as cf
from emulator.autoswitch.epoch_cache import EpochFileCache

REPO = Path(__file__).resolve().parents[2]


def test_written_then_read_back_and_the_old_content_kept_as_bak(tmp_path: Path) -> None:
    path = str(tmp_path / "epochFileCheckpoint")
    cf.write(path, [(1, 0)])
    assert not Path(path + ".bak").exists()
    first = Path(path).read_text()
    cf.write(path, [(1, 0), (2, 4096)])
    assert Path(path + ".bak").read_text() == first
    assert cf.read(path) == [(1, 0), (2, 4096)]


def test_a_damaged_file_falls_back_to_bak(tmp_path: Path) -> None:
    path = str(tmp_path / "epochFileCheckpoint")
    cf.write(path, [(1, 0)])
    cf.write(path, [(1, 0), (2, 4096)])
    lines = Path(path).read_text().splitlines()
    Path(path).write_text("\n".join([lines[0], str(int(lines[1]) + 1), *lines[2:]]) + "\n")  # CRC off
    assert cf.read(path) == [(1, 0)]
    Path(path).write_text("3\n0\n1-0\n")  # fewer entries than counted, CRC not checked (0)
    assert cf.read(path) == [(1, 0)]


def test_a_damaged_file_and_bak_start_with_no_epochs(tmp_path: Path) -> None:
    path = tmp_path / "epochFileCheckpoint"
    path.write_text("2\n0\n1-0\n")
    Path(str(path) + ".bak").write_text("2\n0\n1-0\n")
    assert EpochFileCache(str(path)).all_entries() == []


@pytest.mark.parametrize("content, message", [
    ("", "Cannot parse null string"),
    ("1\n", "Cannot parse null string"),
    ("x\n0\n1-0\n", 'For input string: "x"'),
])
def test_an_empty_or_unparsable_file_stops_the_start(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "epochFileCheckpoint"
    path.write_text(content)
    Path(str(path) + ".bak").write_text("1\n0\n1-0\n")  # not read: NumberFormatException is no IOException
    with pytest.raises(cf.JavaStartFailure) as err:
        EpochFileCache(str(path))
    assert str(err.value) == f"java.lang.NumberFormatException: {message}"


def test_the_broker_exits_255_with_the_java_trace(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / "epochFileCheckpoint").write_text("")
    conf = tmp_path / "broker.conf"
    conf.write_text("\n".join([
        "brokerClusterName=c", "brokerName=b", "brokerId=-1", "brokerRole=SLAVE", "enableControllerMode=true",
        "controllerAddr=127.0.0.1:1", "namesrvAddr=127.0.0.1:1", "listenPort=0", f"storePathRootDir={store}",
        f"storePathCommitLog={store / 'commitlog'}"]) + "\n")
    proc = subprocess.run([sys.executable, "-m", "emulator.broker", "-c", str(conf), "--rocketmq-version", "5.3.0"],
                          cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": str(tmp_path),
                               "ROCKETMQ_LOG_DIR": str(tmp_path / "logs")})
    assert proc.returncode == 255, proc.stderr[-2000:]
    assert proc.stderr.splitlines()[0] == "java.lang.NumberFormatException: Cannot parse null string"
    assert "\tat org.apache.rocketmq.common.utils.CheckpointFile.read(CheckpointFile.java:107)" in proc.stderr
