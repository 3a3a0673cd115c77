"""A worker whose master sends the spawn right after its ack (loads.headless._worker_with_plugin): Locust's
WorkerRunner waits for that ack inside its constructor while its message greenlet already runs, so `test_start` can
fire before the load's plugin is made. The early firing is held until the plugin exists and then reaches it, so the
users never start without their load context. In a child process (Locust patches gevent into whoever imports it):
the runner is Locust's own class, made without its connection (the constructor is what the child stands in for),
and the plugin's start is recorded instead of opening a recorder."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHILD = r'''
import argparse, sys
import gevent
from locust.env import Environment
from locust.runners import WorkerRunner
from loads import headless
from loads.plugin import LoadPlugin
from loads.spec import LoadSpec
from loads.user import user_classes

spec = LoadSpec.model_validate({"topic": "T", "namesrv": "127.0.0.1:9876", "model": "closed",
                                "clients": [{"name": "flood", "users": 1}]})
env = Environment(user_classes=user_classes(spec))
started, firing, early = [], [], []
LoadPlugin._on_test_start = lambda self, **_: started.append(self)

def constructor(host, port):
    runner = WorkerRunner.__new__(WorkerRunner)
    runner.environment, runner.custom_messages = env, {}
    env.runner = runner
    firing.append(gevent.spawn(env.events.test_start.fire, environment=env))  # the master's spawn
    gevent.sleep(0)  # the constructor waits for the ack: the message greenlet runs
    early.append((firing[0].dead, list(started)))
    return runner

env.create_worker_runner = constructor
args = argparse.Namespace(master_host="127.0.0.1", master_port=1, run_dir=sys.argv[1], run_id="r")
runner, plugin = headless._worker_with_plugin(env, spec, args)
firing[0].join(timeout=10)
assert early == [(False, [])], early  # the early test_start waited for the plugin
assert firing[0].dead and started == [plugin], started
env.events.test_start.fire(environment=env)  # a later start reaches the plugin through its own listener only
assert started == [plugin, plugin], started
print("ok")
'''


def test_a_spawn_during_the_runners_constructor_waits_for_the_plugin(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]
