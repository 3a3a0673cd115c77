"""The same client under gevent monkey-patching (as Locust runs it): a child interpreter patches first, then sends
from 200 greenlets over one shared Producer, whose frames go out many per system call, and sees a sync timeout
close the shared connection."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from remoting_scripted_server import SILENT, route_for, send_ok_reply

CHILD = Path(__file__).with_name("remoting_gevent_child.py")
REPO = Path(__file__).resolve().parents[2]


def test_producer_under_gevent(broker_factory, namesrv_factory):
    fast = broker_factory()
    flaky = broker_factory(lambda cmd, n: SILENT if n < 2 else send_ok_reply(cmd, 0, n))
    namesrv = namesrv_factory({"Fast": route_for({"broker-a": fast.addr}),
                               "Flaky": route_for({"broker-b": flaky.addr})})
    done = subprocess.run([sys.executable, str(CHILD), namesrv.addr], capture_output=True, text=True, timeout=120,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["fast"] == 2000
    assert fast.connections_accepted == 1
    assert report["fast_frames_written"] == 2000  # every request written once...
    assert report["fast_writes"] < 2000 / 2  # ...several per sendall: greenlets woken together write together
    assert report["slow_status"] == "SEND_OK"
    assert report["slow_first_error"] == "RemotingSendRequestException"
    assert report["fast_outcome"] == "RemotingTooMuchRequestException"
    assert report["ticks_during_timeouts"] > 10  # the hub kept running: nothing blocked it
