"""The floor under `loads_throughput.py`'s figure: what Locust and gevent alone cost per task, with no protocol,
socket or record. 64 users with no think time run, in turns, a task that
- `empty`: does nothing;
- `event`: fires Locust's `request` event, as every send did until Locust's statistics were fed from the rows in
  batches (loads/locust_feed.py);
- `switch`: waits for another greenlet to answer it (one switch there and back, as a send waits for its response);
- `event+switch`: both, which is the part of a send that Locust and gevent cost.
Each variant prints tasks per CPU second of this process (user + system, after a warm-up). The difference between
the last line and `loads_throughput.py`'s sends per core-second is the send path itself: encoding, the socket,
decoding, the request row.

    .venv/bin/python benchmarks/locust_floor.py [--seconds 5] [--users 64]
"""
from __future__ import annotations

from gevent import monkey

monkey.patch_all()

import gevent  # noqa: E402
from gevent.event import Event  # noqa: E402
from gevent.queue import Queue  # noqa: E402
from locust import User, constant, task  # noqa: E402
from locust.env import Environment  # noqa: E402

import argparse  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

WARMUP_S = 2.0
VARIANTS = {"empty": (False, False), "event": (True, False), "switch": (False, True), "event+switch": (True, True)}


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(fire: bool, switch: bool, users: int, seconds: float) -> tuple[int, float]:
    """Tasks completed and CPU seconds used over `seconds` after the warm-up."""
    done = [0]
    answers: Queue = Queue()

    def responder() -> None:
        while True:
            answers.get().set()

    class Sender(User):
        wait_time = constant(0)

        @task
        def send(self) -> None:
            if switch:
                answered = Event()
                answers.put(answered)
                answered.wait(5)
            if fire:
                self.environment.events.request.fire(request_type="SEND", name="floor", response_time=1.0,
                                                     response_length=128, response=None, context={}, exception=None)
            done[0] += 1

    env = Environment(user_classes=[Sender])
    runner = env.create_local_runner()
    helper = gevent.spawn(responder)
    try:
        runner.start(users, spawn_rate=100)  # all started within the warm-up
        gevent.sleep(WARMUP_S)
        n0, c0 = done[0], cpu_seconds()
        gevent.sleep(seconds)
        return done[0] - n0, cpu_seconds() - c0
    finally:
        runner.quit()
        helper.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--users", type=int, default=64)
    args = parser.parse_args()
    table = Table(title=f"Locust + gevent per task ({args.users} users, no think time)")
    for col in ("task", "tasks", "CPU s", "tasks per core-second", "µs per task"):
        table.add_column(col, justify="right")
    for name, (fire, switch) in VARIANTS.items():
        tasks, cpu = measure(fire, switch, args.users, args.seconds)
        table.add_row(name, f"{tasks:,}", f"{cpu:.2f}", f"{tasks / cpu:,.0f}", f"{1e6 * cpu / tasks:.1f}")
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
