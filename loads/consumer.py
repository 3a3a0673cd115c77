"""One consumer process = one push consumer instance of a group (`ConsumerFleet` starts them)::

    python -m loads.consumer --spec JSON --run-dir D --run-id R --worker <group>.c<i> --namesrv ADDR --topic T
        [--control FILE] [--profile java-4.9.1] [--drain-s 5]

It subscribes the topic as instance `<worker>`, records one consume row per delivery (`loads.consume_recorder`) and
behaves as its `GroupSpec` says, overridden by its control file (`loads.consumer_behaviour`). On stderr: "consumer
<worker> started, client id ..."; on stdout, one JSON line `{"type": "ready", ...}` once the consumer is started and
`{"type": "flow_control", "times": N, "t_ns": ...}` within 0.5 s of each change of how many times its client has held
a pull back (flow control), and `{"type": "stopped", ...}` last. SIGTERM/SIGINT: deliveries from then on are held (not
recorded, not acknowledged: their offsets stay uncommitted, so they are delivered again elsewhere), the listeners in
flight get up to `--drain-s` to return, the consumer shuts down (offsets persisted, unregistered), every row is
written (those still in a listener as ABANDONED), exit 0.
"""
from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from loads.consume_recorder import ConsumeRecorder
from loads.consumer_behaviour import Behaviour
from loads.consumer_spec import GroupSpec

log = logging.getLogger("loads.consumer")

DEFAULT_FACTORY = "remoting.consumer:PushConsumer"
DEFAULT_DRAIN_S = 5.0
SHUTDOWN_TIMEOUT_S = 15.0
POLL_S = 0.05
KEY_SEPARATOR = " "  # MessageConst.KEY_SEPARATOR
PROPERTY_RETRY_TOPIC = "RETRY_TOPIC"


def first_key(keys: str | None, run_id: str) -> str | None:
    """The harness key: the first of KEYS when it is one of this run's (`<run_id>:...`), else None."""
    if not keys:
        return None
    key = keys.split(KEY_SEPARATOR, 1)[0]
    return key if key.startswith(f"{run_id}:") else None


class ConsumerMain:
    """The listener and the life of one consumer process."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.spec = GroupSpec.model_validate_json(args.spec)
        self.worker = args.worker
        self.run_id = args.run_id
        self.recorder = ConsumeRecorder(args.run_dir, self.worker)
        self.recorder.on_failure = recorder_failed
        self.behaviour = Behaviour(self.spec, args.control, seed=self.worker)
        self.stopping = threading.Event()
        self.consumer: Any = None
        self.client_id: str | None = None

    def row(self, msg: Any, ctx: Any, delivered_ns: int) -> dict[str, Any]:
        queue = ctx.message_queue
        props = msg.properties or {}
        return {
            "run_id": self.run_id, "worker": self.worker, "group": self.spec.name, "consumer": self.client_id,
            "topic": props.get(PROPERTY_RETRY_TOPIC) or msg.topic,
            "key": first_key(props.get("KEYS"), self.run_id), "msg_id": props.get("UNIQ_KEY") or msg.msg_id,
            "broker": queue.broker_name, "broker_id": ctx.broker_id, "pulled_topic": queue.topic,
            "queue_id": msg.queue_id, "queue_offset": msg.queue_offset, "born_ms": msg.born_timestamp,
            "store_ms": msg.store_timestamp, "pulled_ns": ctx.pulled_ns, "delivered_ns": delivered_ns,
            "done_ns": None, "result": "ABANDONED", "reconsume_times": msg.reconsume_times,
            "body_size": len(msg.body) if msg.body is not None else None,
        }

    def listener(self, msgs: list, ctx: Any) -> str:
        delivered_ns = time.time_ns()
        if self.stopping.is_set():
            self.behaviour.hold_forever()  # stopping: not recorded, never acknowledged
        ids = self.recorder.delivered([self.row(m, ctx, delivered_ns) for m in msgs])
        if ids is None:
            self.behaviour.hold_forever()
        try:
            result = self.behaviour.consume(msgs)
        except Exception as e:
            self.recorder.done(ids, time.time_ns(), type(e).__name__)
            raise
        self.recorder.done(ids, time.time_ns(), result)
        return result

    def start(self, factory: Callable[..., Any]) -> None:
        s = self.spec
        self.consumer = factory(self.args.namesrv, s.name, s.profile or self.args.profile,
                                instance_name=self.worker, consume_threads=s.threads, consume_from=s.consume_from,
                                pull_threshold_for_queue=s.pull_threshold_for_queue,
                                poll_name_server_interval_ms=s.poll_name_server_interval)
        self.consumer.subscribe(self.args.topic, "*")
        self.consumer.register_listener(self.listener)
        self.client_id = getattr(self.consumer, "client_id", None)
        self.recorder.start()
        self.behaviour.start()
        self.consumer.start()
        self.client_id = getattr(self.consumer, "client_id", None) or self.client_id

    def stop(self) -> dict[str, Any]:
        """Hold new deliveries, let the listeners in flight finish (bounded), shut the consumer down, write every
        row."""
        self.stopping.set()
        deadline = time.monotonic() + self.args.drain_s
        while self.recorder.in_listener and time.monotonic() < deadline:
            time.sleep(POLL_S)
        if self.consumer is not None:
            done = threading.Event()

            def shutdown() -> None:
                try:
                    self.consumer.shutdown()
                except Exception:
                    log.exception("consumer %s: shutdown failed", self.worker)
                finally:
                    done.set()

            threading.Thread(target=shutdown, name="shutdown", daemon=True).start()
            if not done.wait(SHUTDOWN_TIMEOUT_S):
                log.error("consumer %s: shutdown did not finish within %.0f s", self.worker, SHUTDOWN_TIMEOUT_S)
        self.behaviour.stop()
        rows = self.recorder.close()
        return {"rows": rows, "parts": len(self.recorder.parts), "abandoned": self.recorder.abandoned}


def flow_control_times(consumer: Any) -> int:
    """How many times the client has held a pull back so far (Java's `queueFlowControlTimes` plus
    `queueMaxSpanFlowControlTimes`: too many or too large messages cached, or too wide a span, in a queue): the
    consumer, not the broker, was behind. 0 for a client without these counters."""
    counters = getattr(consumer, "counters", None)
    if counters is None:
        return 0
    stats = counters.snapshot({})
    return stats.queue_flow_control_times + stats.queue_max_span_flow_control_times


def _factory(spec: str) -> Callable[..., Any]:
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


def _say(message: dict[str, Any]) -> bool:
    """One line to the harness on stdout; False when the harness is gone (the pipe closed: it died or was ended at
    once by a second signal), and the consumer then stops as if told to: no one reads its lines any more, and a
    process left behind must not go on acknowledging messages."""
    try:
        sys.stdout.write(json.dumps(message, separators=(",", ":"), default=str) + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):  # ValueError: stdout closed after an earlier broken pipe
        return False
    return True


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m loads.consumer", description=__doc__.splitlines()[0])
    p.add_argument("--spec", required=True, help="the group's GroupSpec as JSON")
    p.add_argument("--run-dir", required=True)
    p.add_argument("--run-id", required=True)
    p.add_argument("--worker", required=True, help="<group>.c<i>[.r<n>]: instance name and part file name")
    p.add_argument("--namesrv", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--control", default=None, help="control file (JSON) polled for stuck/processing/release")
    p.add_argument("--profile", default="java-4.9.1")
    p.add_argument("--drain-s", type=float, default=DEFAULT_DRAIN_S, help="how long a stop waits for listeners")
    p.add_argument("--factory", default=DEFAULT_FACTORY, help="module:callable building the push consumer")
    return p.parse_args(argv)


EXIT_RECORDS = 3
"""The consumer's deliveries could not be recorded: it ends at once, acknowledging nothing more (the harness sees
the exit and stops the run)."""


def recorder_failed(error: str) -> None:
    print(f"consumer: {error}; ending at once", file=sys.stderr, flush=True)
    os._exit(EXIT_RECORDS)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    proc = ConsumerMain(args)
    try:
        proc.start(_factory(args.factory))
    except Exception as e:
        log.exception("consumer %s failed to start", args.worker)
        proc.recorder.close()
        _say({"type": "failed", "worker": args.worker, "error": f"{type(e).__name__}: {e}"})
        return 1
    print(f"consumer {args.worker} started, client id {proc.client_id}, group {proc.spec.name}, topic {args.topic}",
          file=sys.stderr, flush=True)
    _say({"type": "ready", "worker": args.worker, "pid": os.getpid(), "client_id": proc.client_id})
    said = 0
    while not stop.wait(0.5):
        times = flow_control_times(proc.consumer)
        if times != said:  # the harness judges a group that must keep up by it (harness.consumerstage)
            said = times
            if not _say({"type": "flow_control", "worker": args.worker, "times": times, "t_ns": time.time_ns()}):
                log.warning("consumer %s: the harness is gone (its pipe closed); stopping", args.worker)
                break
    log.info("consumer %s stopping", args.worker)
    result = proc.stop()
    log.info("consumer %s stopped: %s", args.worker, result)
    _say({"type": "stopped", "worker": args.worker, **result})
    logging.shutdown()
    os._exit(0)  # listeners held since the stop must not keep the process


if __name__ == "__main__":
    sys.exit(main())
