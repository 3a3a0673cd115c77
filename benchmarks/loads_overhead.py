"""The load generator's own cost per send, without the RocketMQ client: Locust's task loop and statistics, the
schedule, the request row, Locust's statistics fed from the rows, with a stand-in producer whose `send` yields once
and returns a SEND_OK result. Prints sends per core-second of this process (from the start to the last row
written); compare with `loads_throughput.py` (the real `remoting.producer` against a scripted broker) to see which
side a send's CPU goes to.

    .venv/bin/python benchmarks/loads_overhead.py [--users 64] [--seconds 5]

Runs Locust in this process (gevent monkey-patching included): a benchmark, never imported by tests.
"""
from __future__ import annotations

import gevent
from locust.env import Environment

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import loads.producers as producers  # noqa: E402
from loads.plugin import LoadPlugin  # noqa: E402
from loads.spec import LoadSpec  # noqa: E402
from loads.user import user_classes  # noqa: E402
from remoting.producer import SendResult  # noqa: E402


class StandInProducer:
    """Answers every send at once (after yielding to the hub once, as a real send would)."""

    def send(self, message, timeout_ms=None) -> SendResult:
        message.properties.setdefault("UNIQ_KEY", "0" * 32)
        gevent.sleep(0)
        return SendResult("SEND_OK", message.properties["UNIQ_KEY"], "", "broker-a", 0, 0)

    def close(self) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    producers.ProducerPool._create = lambda self, client: StandInProducer()
    spec = LoadSpec.model_validate({"topic": "BenchTopic", "namesrv": "127.0.0.1:9", "model": "closed",
                                    "users": args.users, "clients": [{"name": "flood"}]})
    with tempfile.TemporaryDirectory(prefix="loads-overhead-") as tmp:
        env = Environment(user_classes=user_classes(spec))
        env.create_local_runner()
        plugin = LoadPlugin(env, spec, Path(tmp) / "run", "overhead")
        # from the start to the last row written: the rows' writing and Locust's statistics, which follow the
        # sends by up to a flush interval (longer when the stand-in outruns the writer), are all in the figure
        cpu0 = time.process_time()
        env.runner.start(args.users, spawn_rate=args.users)
        gevent.sleep(args.seconds)
        totals = plugin.drain()
        cpu1 = time.process_time()
    sends = totals["rows"]
    print(f"{sends:,} sends in {cpu1 - cpu0:.2f} CPU s: {sends / (cpu1 - cpu0):,.0f} sends per core-second "
          f"({(cpu1 - cpu0) / sends * 1e6:.1f} us each) without the RocketMQ client; rows written {totals['rows']:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
