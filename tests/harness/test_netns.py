"""The network namespace Apache runs get: only loopback, up, and gone with its processes."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness.netns import isolated_argv

pytestmark = pytest.mark.root
PROBE = """
import os, socket
print(sorted(name for _, name in socket.if_nameindex()))
s = socket.socket(); s.bind(('0.0.0.0', 0)); s.listen(); port = s.getsockname()[1]
c = socket.create_connection(('127.0.0.1', port), timeout=2); print('loopback ok')
print(os.readlink('/proc/self/ns/net'))
"""


def test_isolated_command_sees_only_loopback() -> None:
    out = subprocess.run(isolated_argv([sys.executable, "-c", PROBE]), capture_output=True, text=True, check=True,
                         timeout=30).stdout.splitlines()
    assert out[0] == "['lo']"
    assert out[1] == "loopback ok"
    assert out[2] != os.readlink("/proc/self/ns/net"), "the command ran in a namespace of its own"
