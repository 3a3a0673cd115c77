"""The producer's latency-fault strategy: `MQFaultStrategy` with its `LatencyFaultToleranceImpl`, as each client
version has it. `DefaultMQProducerImpl.sendDefaultImpl` asks it for the queue of every attempt and tells it after
every attempt how long the attempt took and how it ended; with `sendLatencyFaultEnable` (off by default in every
version) it keeps a `FaultItem` per broker name and steers sends away from brokers that were slow or failed.

Two styles, read from the client sources (docs/remoting.md, "Several broker groups"):

- `"4.9"` (rocketmq-all-4.9.1 and 4.9.3, identical there): a send that took `latency` ms makes its broker unavailable
  for `notAvailableDuration[i]` ms, the `i` of the largest `latencyMax[i] <= latency` (50, 100, 550, 1000, 2000,
  3000, 15000 ms -> 0, 0, 30 s, 60 s, 120 s, 180 s, 600 s); any exception counts as 30000 ms (600 s). Every update
  sets the item's start to now + duration, so a fast send makes its broker available at once. The queue choice
  walks the queues from one step of the thread's index, without avoiding the last broker; when every broker is
  unavailable it takes `pickOneAtLeast()`'s broker and rewrites the chosen queue entry of the topic's publish info
  to that broker (the Java client sets the fields of the list's own `MessageQueue`; the entry stays rewritten until
  the route changes).
- `"5.3"` (rocketmq-all-5.3.0; the RIP-63 rework of 5.1.4, with #7320 and #7812 of 5.2.0): tables 50, 100, 550,
  1800, 3000, 5000, 15000 ms -> 0, 0, 2, 5, 6, 10, 30 s; an isolating failure counts as 10000 ms (10 s); an update
  only ever moves the start later (a fast send does not end an isolation); items carry a reachable flag. The queue
  choice is filtered: available and not the last broker, else reachable and not the last broker, else any queue;
  on a retry the thread's index restarts at random. Without the switch: not the last broker, else any queue.
  With `startDetectorEnable` a remoting failure marks its broker unreachable instead of isolating it as reachable,
  and a detector round every 3 s asks each item's broker for a max offset and marks the ones that answer reachable.

Thread- and greenlet-safe as the producer is: the items live in one dict (a new item is put with `setdefault`, the
rest are plain field writes, as Java's volatile fields), the indexes are thread-local (greenlet-local under gevent).
Times are whole milliseconds of a monotonic clock (`remoting.client.now_ms`; tests hand in their own)."""
from __future__ import annotations

import random
from collections.abc import Callable

from remoting.client import now_ms
from remoting.errors import MQBrokerException, MQClientException, RemotingError
from remoting.route import MessageQueue, ThreadLocalIndex, TopicPublishInfo, java_abs, java_int, java_rem

STYLES = ("4.9", "5.3")
LATENCY_MAX_4_9 = (50, 100, 550, 1000, 2000, 3000, 15000)  # MQFaultStrategy.latencyMax, 4.9.x (and 5.0.0-5.1.3)
NOT_AVAILABLE_4_9 = (0, 0, 30_000, 60_000, 120_000, 180_000, 600_000)  # .notAvailableDuration
LATENCY_MAX_5_3 = (50, 100, 550, 1800, 3000, 5000, 15000)  # 5.1.4+ (RIP-63, PR #6568)
NOT_AVAILABLE_5_3 = (0, 0, 2000, 5000, 6000, 10_000, 30_000)
ISOLATION_LATENCY_MS = {"4.9": 30_000, "5.3": 10_000}  # updateFaultItem(.., isolation=true) counts as this latency
DETECT_PERIOD_S = 3.0  # LatencyFaultToleranceImpl.startDetector: scheduleAtFixedRate(.., 3, 3, SECONDS)
DETECT_INTERVAL_MS = 2000  # ClientConfig.detectInterval: one probe per broker at most this often
DETECT_TIMEOUT_MS = 200  # ClientConfig.detectTimeout

Clock = Callable[[], int]


class FaultItem:
    """`LatencyFaultToleranceImpl.FaultItem`: a broker's last latency, the moment it is available again (`start_ms`),
    its reachable flag (5.x) and the moment of its next detector probe (5.x)."""

    __slots__ = ("name", "current_latency", "start_ms", "reachable", "check_ms")

    def __init__(self, name: str, reachable: bool = True) -> None:
        self.name = name
        self.current_latency = 0
        self.start_ms = 0
        self.reachable = reachable
        self.check_ms = 0

    def __repr__(self) -> str:
        return (f"FaultItem(name={self.name!r}, current_latency={self.current_latency}, start_ms={self.start_ms}, "
                f"reachable={self.reachable})")


class LatencyFaultTolerance:
    """`LatencyFaultToleranceImpl` of one style (`"4.9"` or `"5.3"`, see the module docstring)."""

    def __init__(self, style: str = "4.9", clock: Clock = now_ms) -> None:
        if style not in STYLES:
            raise ValueError(f"unknown fault strategy style {style!r}; allowed: {', '.join(STYLES)}")
        self.style = style
        self.clock = clock
        self.items: dict[str, FaultItem] = {}
        self._which_item_worst = ThreadLocalIndex("4.9")

    def update_fault_item(self, name: str, current_latency: int, not_available_ms: int,
                          reachable: bool = True) -> None:
        """Record a send's latency and the duration its broker is to be avoided (`reachable`: 5.x only)."""
        item = self.items.get(name)
        if item is None:
            item = self.items.setdefault(name, FaultItem(name, reachable))
        now = self.clock()
        item.current_latency = current_latency
        if self.style == "4.9":
            item.start_ms = now + not_available_ms
            return
        if not_available_ms > 0 and now + not_available_ms > item.start_ms:  # FaultItem.updateNotAvailableDuration
            item.start_ms = now + not_available_ms
        item.reachable = reachable

    def is_available(self, name: str) -> bool:
        """No item, or its start has come (5.2.0+ ignores the reachable flag here: #7812)."""
        item = self.items.get(name)
        return item is None or self.clock() >= item.start_ms

    def is_reachable(self, name: str) -> bool:
        item = self.items.get(name)
        return item is None or item.reachable

    def remove(self, name: str) -> None:
        self.items.pop(name, None)

    def pick_one_at_least(self) -> str | None:
        """The broker to use when none is available. 4.9: the items shuffled (4.9.1-4.9.3; 4.9.4 dropped it) and
        sorted stably, available ones first, then by latency, then by start; one of the better half by the
        `whichItemWorst` index (the only one when there is one). 5.x: the first reachable item in shuffled order
        (5.3.0's producer no longer calls it). None without items. Raises IndexError where Java's list access
        would throw (`Math.abs(Integer.MIN_VALUE) % half` is negative)."""
        items = list(self.items.values())
        if not items:
            return None
        random.shuffle(items)
        if self.style == "5.3":
            return next((item.name for item in items if item.reachable), None)
        now = self.clock()
        items.sort(key=lambda item: (now < item.start_ms, item.current_latency, item.start_ms))
        half = len(items) // 2
        if half <= 0:
            return items[0].name
        i = java_rem(self._which_item_worst.increment_and_get(), half)
        if i < 0:
            raise IndexError(i)
        return items[i].name

    def detect_one_round(self, resolve: Callable[[str], str | None], detect: Callable[[str, int], bool],
                         interval_ms: int = DETECT_INTERVAL_MS, timeout_ms: int = DETECT_TIMEOUT_MS) -> None:
        """5.x `detectByOneRound`: each item whose probe is due gets its next one `interval_ms` later; an item whose
        broker has no address any more is dropped; one whose broker answers `detect(addr, timeout_ms)` becomes
        reachable."""
        for name, item in list(self.items.items()):
            now = self.clock()
            if now < item.check_ms:
                continue
            item.check_ms = now + interval_ms
            addr = resolve(name)
            if addr is None:
                self.items.pop(name, None)
                continue
            if detect(addr, timeout_ms) and not item.reachable:
                item.reachable = True


class MQFaultStrategy:
    """`MQFaultStrategy` of one style. `enabled` is `sendLatencyFaultEnable` (a plain field: switching it while sends
    run is allowed, as Java's setter is); `latency_max` / `not_available_duration` are its tables (Java's setters
    `setLatencyMax` / `setNotAvailableDuration`); `start_detector_enable` is 5.x's `startDetectorEnable`."""

    def __init__(self, style: str = "4.9", *, enabled: bool = False, latency_max: tuple[int, ...] | None = None,
                 not_available_duration: tuple[int, ...] | None = None, start_detector_enable: bool = False,
                 clock: Clock = now_ms) -> None:
        self.tolerance = LatencyFaultTolerance(style, clock)
        self.style = style
        self.enabled = enabled
        new = style == "5.3"
        self.latency_max = tuple(latency_max or (LATENCY_MAX_5_3 if new else LATENCY_MAX_4_9))
        self.not_available_duration = tuple(not_available_duration or (NOT_AVAILABLE_5_3 if new else NOT_AVAILABLE_4_9))
        if len(self.latency_max) != len(self.not_available_duration):
            raise ValueError("latency_max and not_available_duration must have the same length")
        self.start_detector_enable = start_detector_enable
        self.isolation_latency = ISOLATION_LATENCY_MS[style]

    @property
    def clock(self) -> Clock:
        return self.tolerance.clock

    @clock.setter
    def clock(self, clock: Clock) -> None:
        self.tolerance.clock = clock

    # -- the choice of a queue ---------------------------------------------------------------------------------

    def select_one_message_queue(self, info: TopicPublishInfo, last_broker_name: str | None,
                                 reset_index: bool = False) -> MessageQueue:
        """The queue of the next attempt (`reset_index`: a retry, which 5.x's latency path starts from a fresh random
        index)."""
        if not self.enabled:
            return info.select_one_message_queue(last_broker_name)
        if self.style == "4.9":
            return self._select_4_9(info)
        if reset_index:
            info.send_which_queue.reset()
        tolerance = self.tolerance
        mq = info.select_where(lambda q: q.broker_name != last_broker_name and tolerance.is_available(q.broker_name))
        if mq is None:
            mq = info.select_where(lambda q: q.broker_name != last_broker_name
                                   and tolerance.is_reachable(q.broker_name))
        return mq if mq is not None else info.select_one_message_queue()

    def _select_4_9(self, info: TopicPublishInfo) -> MessageQueue:
        """4.9.1's latency path: from one step of the index, the first queue whose broker is available (a local count
        walks on, the thread's index moves one step per send); else `pickOneAtLeast`'s broker on the queue entry that
        the next step chooses, with a queue id from one more step (the entry is rewritten in place); else, or on an
        error (Java's catch-all), the next step's queue."""
        queues = info.message_queue_list
        n = len(queues)
        index = info.send_which_queue.increment_and_get()
        for _ in range(n):
            a = java_abs(index)
            mq = queues[a % n if a >= 0 else 0]
            index = java_int(index + 1)
            if self.tolerance.is_available(mq.broker_name):
                return mq
        try:
            not_best = self.tolerance.pick_one_at_least()
        except IndexError:  # Java's catch-all around the whole choice
            return queues[info.next_position()]
        write_queue_nums = info.write_queue_nums_of(not_best)
        if write_queue_nums > 0:
            pos = info.next_position()
            queue_id = java_rem(info.send_which_queue.increment_and_get(), write_queue_nums)
            queues[pos] = mq = MessageQueue(queues[pos].topic, not_best, queue_id)
            return mq
        if not_best is not None:  # Java's remove(null) throws instead, which ends the same way
            self.tolerance.remove(not_best)
        return queues[info.next_position()]

    # -- what each attempt teaches it --------------------------------------------------------------------------

    def compute_not_available_duration(self, latency: int) -> int:
        """The duration of the largest `latency_max` step at or below `latency`; 0 below the first."""
        for limit, duration in zip(reversed(self.latency_max), reversed(self.not_available_duration), strict=True):
            if latency >= limit:
                return duration
        return 0

    def update_fault_item(self, broker_name: str, latency: int, isolation: bool, reachable: bool = True) -> None:
        """`updateFaultItem`: nothing unless enabled; an isolating update counts as `isolation_latency`."""
        if self.enabled:
            duration = self.compute_not_available_duration(self.isolation_latency if isolation else latency)
            self.tolerance.update_fault_item(broker_name, latency, duration, reachable)

    def record(self, broker_name: str, latency: int, error: RemotingError | None) -> None:
        """What `sendDefaultImpl` tells the strategy after an attempt that took `latency` ms and ended with `error`
        (None: an answer that made a send result, whatever its status). 4.9: every exception isolates. 5.3:
        MQClientException does not isolate; MQBrokerException isolates and marks unreachable; a remoting exception
        isolates, unreachable only when the detector is on (it will mark the broker reachable again)."""
        if not self.enabled:
            return
        if error is None:
            self.update_fault_item(broker_name, latency, False, True)
        elif self.style == "4.9":
            self.update_fault_item(broker_name, latency, True)
        elif isinstance(error, MQClientException):
            self.update_fault_item(broker_name, latency, False, True)
        elif isinstance(error, MQBrokerException):
            self.update_fault_item(broker_name, latency, True, False)
        else:
            self.update_fault_item(broker_name, latency, True, not self.start_detector_enable)
