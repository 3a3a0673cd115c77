"""The emulator runs on the standard library alone: the Docker image (compose/image/build-emulator-image.sh) carries
Debian's python3 and our `remoting` and `emulator` packages, nothing from PyPI. Checked in a child interpreter
without site-packages (`-S`): the entry points (broker, name server, controller, the controller-mode modules) import, and a JSON and a binary frame round-trip."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHILD = """
import sys
import emulator.broker, emulator.namesrv, emulator.controller_main
import emulator.autoswitch.replicas_manager, emulator.autoswitch.ha_client, emulator.controllermode.node
from remoting import codec
from remoting.codes import SerializeType
from remoting.command import RemotingCommand
for stype in (SerializeType.JSON, SerializeType.ROCKETMQ):
    cmd = RemotingCommand(code=310, opaque=7, remark="r", ext_fields={"a": "g", "i": "KEYS\\x01k"}, body=b"x",
                          serialize_type=stype)
    again = codec.decode_frame(codec.encode(cmd)[4:])
    assert (again.code, again.opaque, again.remark, again.ext_fields, again.body) == (310, 7, "r", cmd.ext_fields, b"x")
outside = sorted(name for name in sys.modules if name.split(".")[0] in ("orjson", "psutil", "yaml", "pydantic"))
print("outside:", outside)
"""


def test_the_emulator_imports_and_codes_frames_without_site_packages() -> None:
    done = subprocess.run([sys.executable, "-S", "-c", CHILD], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "outside: []"
