"""The load's own process: Locust headless, driven over the control channel (`loads.control`) by `LoadProcess`.

    python -m loads.headless --role local|master --spec SPEC --run-dir DIR --run-id ID [--expect-workers N]
    python -m loads.headless --role worker [--master-host H] --master-port P [--master-pid PID] --spec SPEC ...

`local` runs the users itself; `master` runs a Locust master on 127.0.0.1 and waits for `--expect-workers` workers
(started by `LoadProcess`); `worker` runs users for a master. gevent's monkey-patching happens here, never in the
harness. Every way out is orderly: the `stop` command, SIGTERM, SIGINT, or the control pipe closing (the harness
died) all drain the load (no new sends, sends in flight finish, every row written) before the process exits; a
worker whose master vanished does the same for itself.
"""
from __future__ import annotations

import gevent
import gevent.event
from gevent.fileobject import FileObjectPosix
from locust.env import Environment
from locust.stats import StatsError

import argparse
import logging
import os
import signal
import sys
import time
from typing import Any

from loads import control
from loads.plugin import LoadPlugin
from loads.spec import SpecError, load_spec
from loads.user import user_classes

log = logging.getLogger("loads.headless")

STATS_INTERVAL_S = 1.0
WORKERS_TIMEOUT_S = 60.0
USERS_TIMEOUT_S = 30.0
"""How long the start waits for the spawn to be over (a worker reports its users within about a second)."""
MASTER_WATCH_INTERVAL_S = 0.5
SWITCH_INTERVAL_S = 0.0005
"""The GIL switch interval: the writer thread converting rows must not hold the event loop for 5 ms (default)."""
LISTEN_HOST = "127.0.0.1"


class Controller:
    """Runs one local or master process under the control channel."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out_fd = os.dup(1)
        os.dup2(2, 1)  # stray prints go to the log, never into the control channel
        self.spec = load_spec(args.spec)
        self.env = Environment(user_classes=user_classes(self.spec))
        if args.role == "master":
            self.env.create_master_runner(args.master_host, args.master_port)
        else:
            self.env.create_local_runner()
        self.plugin = LoadPlugin(self.env, self.spec, args.run_dir, args.run_id)
        self.plugin.on_failure = lambda failure: self.emit({"type": control.MSG_FAILED, **failure})
        self.state = "ready"
        self._stopping = False

    def emit(self, message: dict[str, Any]) -> None:
        data = control.encode(message)
        while data:
            data = data[os.write(self.out_fd, data):]

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT):
            gevent.signal_handler(sig, lambda s=sig: gevent.spawn(self.shutdown, signal.Signals(s).name))
        if self.args.role == "master":
            self.emit({"type": control.MSG_LISTENING, "port": self.args.master_port})
            self._wait_for_workers()
        self.emit({"type": control.MSG_READY})
        gevent.spawn(self._push_stats)
        stdin = FileObjectPosix(sys.stdin.fileno(), "rb", close=False)
        while True:
            line = stdin.readline()
            if not line:
                self.shutdown("control pipe closed")
            msg = control.decode(line)
            if msg is not None:
                self._handle(msg)

    def _wait_for_workers(self) -> None:
        runner = self.env.runner
        deadline = time.monotonic() + WORKERS_TIMEOUT_S
        while len(runner.clients.ready) < self.args.expect_workers:
            if time.monotonic() > deadline:
                log.error("only %d of %d workers connected", len(runner.clients.ready), self.args.expect_workers)
                self.shutdown("workers did not connect")
            gevent.sleep(0.05)

    def _handle(self, msg: dict[str, Any]) -> None:
        cmd, msg_id = msg.get("cmd"), msg.get("id")
        try:
            if cmd == control.CMD_START:
                result = self._start(msg.get("phase"), msg.get("at_ns"))
            elif cmd == control.CMD_PHASE:
                result = self.plugin.set_phase(msg["name"], msg.get("rate"), msg.get("at_ns"))
            elif cmd == control.CMD_STATS:
                result = self.plugin.stats(self.state)
            elif cmd == control.CMD_STOP:
                self.emit({"type": control.MSG_REPLY, "id": msg_id, "ok": True, "result": {}})
                self.shutdown("stop")
            else:
                raise ValueError(f"unknown command {cmd!r}; allowed: {', '.join(control.COMMANDS)}")
        except Exception as e:  # the harness gets the error; the load goes on
            log.exception("command %s failed", cmd)
            self.emit({"type": control.MSG_REPLY, "id": msg_id, "ok": False, "error": f"{type(e).__name__}: {e}"})
            return
        self.emit({"type": control.MSG_REPLY, "id": msg_id, "ok": True, "result": result})

    def _start(self, phase: str | None, at_ns: int | None) -> dict[str, Any]:
        if phase is not None:
            self.plugin.set_phase(phase, None, at_ns)
        users = sum(p.users for p in self.spec.plan().values())
        self.env.runner.start(users, spawn_rate=max(users, 1) * 1000.0)
        started = self._users_started(users)
        if started < users:  # a load that would send nothing for the whole run (its users failed as they started)
            raise RuntimeError(f"only {started} of {users} users started (the workers' logs in logs/load/ say why)")
        self.state = "running"
        return {"users": users, "target_rate": self.plugin.target_rate}

    def _users_started(self, users: int) -> int:
        """How many users run once the spawn is over: as the workers reported them to the master, or this
        process's own (bounded: a worker that never reports counts none)."""
        runner = self.env.runner
        deadline = time.monotonic() + USERS_TIMEOUT_S
        if self.args.role == "master":
            while not runner.spawning_completed and time.monotonic() < deadline:
                gevent.sleep(0.05)
            return sum(runner.reported_user_classes_count.values())
        while runner.user_count < users and time.monotonic() < deadline and not (
                runner.spawning_greenlet is not None and runner.spawning_greenlet.ready()):
            gevent.sleep(0.05)
        return runner.user_count

    def _push_stats(self) -> None:
        while True:
            gevent.sleep(STATS_INTERVAL_S)
            self.emit({"type": control.MSG_STATS, **self.plugin.stats(self.state)})

    def shutdown(self, reason: str) -> None:
        """Drain, write every row, tell the harness, exit. Runs once; later calls wait for the process to end."""
        if self._stopping:
            return
        self._stopping = True
        self.state = "stopping"
        log.info("stopping the load: %s", reason)
        code = 0
        try:
            result = self.plugin.drain()
            result["locust"] = locust_totals(self.env)
            if self.args.role == "master":
                self.env.runner.quit()
        except Exception as e:  # still tell the harness and exit: a load process must never hang on its way out
            log.exception("draining the load failed")
            result, code = {"error": f"{type(e).__name__}: {e}"}, 1
        self.state = "stopped"
        try:
            self.emit({"type": control.MSG_STOPPED, "reason": reason, "result": result,
                       "stats": self.plugin.stats(self.state)})
        except OSError:
            log.warning("the harness is gone; the stop report was not delivered")
        logging.shutdown()
        os._exit(code)


def locust_totals(env: Environment) -> dict[str, Any]:
    """Locust's own statistics (on a master: as far as the workers reported them)."""
    total = env.stats.total
    errors: dict[str, int] = {}
    for e in env.stats.errors.values():
        name = StatsError.parse_error(e.error)
        errors[name] = errors.get(name, 0) + e.occurrences
    return {"requests": total.num_requests, "failures": total.num_failures, "errors": errors}


def _worker_with_plugin(env: Environment, spec: Any, args: argparse.Namespace) -> tuple[Any, LoadPlugin]:
    """The worker runner and the load's plugin on it. Locust's WorkerRunner waits for the master's ack inside its
    constructor, and its message greenlet already runs: a spawn the master sends right after the ack fires
    `test_start` and starts the users before the plugin exists (seen in CI on a loaded machine: every user failed
    with "no load context", the run sent nothing). So a first listener holds such an early `test_start` until the
    plugin is made, then gives it to the plugin (whose own listener came too late for that firing)."""
    made = gevent.event.Event()
    held: list[dict[str, Any]] = []
    box: list[LoadPlugin] = []

    def early(**kw: Any) -> None:
        held.append(kw)
        made.wait()  # the message greenlet waits; the users are spawned after this returns
        box[0]._on_test_start(**kw)

    env.events.test_start.add_listener(early)
    runner = env.create_worker_runner(args.master_host, args.master_port)
    plugin = LoadPlugin(env, spec, args.run_dir, args.run_id)
    box.append(plugin)
    env.events.test_start.remove_listener(early)
    made.set()
    if held:
        log.info("worker: the spawn came before the load was attached; held until it was")
    return runner, plugin


def run_worker(args: argparse.Namespace) -> int:
    """A worker: users for the master at 127.0.0.1:`--master-port`; drains itself if the master goes away."""
    spec = load_spec(args.spec)
    env = Environment(user_classes=user_classes(spec))
    runner, plugin = _worker_with_plugin(env, spec, args)
    stopping: list[str] = []

    def leave(reason: str) -> None:
        if stopping:
            return
        stopping.append(reason)
        log.info("worker %s stopping: %s", plugin.worker, reason)
        code = 0
        try:
            log.info("worker totals: %s", plugin.drain())
        except Exception:  # never hang on the way out
            log.exception("draining the worker failed")
            code = 1
        logging.shutdown()
        os._exit(code)

    def watch_master() -> None:
        while True:
            gevent.sleep(MASTER_WATCH_INTERVAL_S)
            try:
                os.kill(args.master_pid, 0)
            except ProcessLookupError:
                leave("master process gone")

    for sig in (signal.SIGTERM, signal.SIGINT):
        gevent.signal_handler(sig, lambda s=sig: gevent.spawn(leave, signal.Signals(s).name))
    if args.master_pid:
        gevent.spawn(watch_master)
    runner.greenlet.join()
    if plugin.ctx is not None:
        plugin.ctx.close()
    logging.shutdown()
    os._exit(0)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m loads.headless", description="the load's own process")
    parser.add_argument("--role", choices=("local", "master", "worker"), required=True)
    parser.add_argument("--spec", required=True, help="LoadSpec file (JSON or YAML)")
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--master-host", default=LISTEN_HOST,
                        help="the master's address: where a master listens, where a worker connects")
    parser.add_argument("--master-port", type=int, default=0)
    parser.add_argument("--master-pid", type=int, default=0)
    parser.add_argument("--expect-workers", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format=f"%(asctime)s {args.role} %(process)d %(levelname)s %(name)s: %(message)s")
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        if args.role == "worker":
            return run_worker(args)
        return Controller(args).run()
    except SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
