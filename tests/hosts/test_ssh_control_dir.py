"""`harness.hosts.ssh.make_control_dir`: the master connections' socket directory fits a Unix socket path (at most
107 bytes, with ssh's 17-character temporary suffix) whatever $TMPDIR is: under a $TMPDIR too long for that it goes
to /tmp (a run with such a $TMPDIR failed on every host: "too long for Unix domain socket"); a long host name is
hashed in the socket's name."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from harness.hosts import ssh
from harness.hosts.inventory import Host


def _socket_len(control: Path, name: str) -> int:
    return len(str(ssh.SshHost(Host(name=name, address="10.0.0.1"), control).control_path)) + len(".1234567890123456")


def test_a_long_tmpdir_falls_back_to_tmp_and_a_short_one_is_used(tmp_path: Path, monkeypatch) -> None:
    long_dir = tmp_path / ("x" * 80)
    long_dir.mkdir()
    short = Path(tempfile.mkdtemp(prefix="s-", dir="/tmp"))
    for base, expect_under in ((long_dir, Path("/tmp")), (short, short)):
        monkeypatch.setenv("TMPDIR", str(base))
        monkeypatch.setattr(ssh.tempfile, "tempdir", None)  # gettempdir() reads $TMPDIR again
        control = ssh.make_control_dir()
        try:
            assert control.parent == expect_under
            assert _socket_len(control, "n" * 40) <= ssh.SOCKET_PATH_MAX
        finally:
            shutil.rmtree(control)
    short.rmdir()
