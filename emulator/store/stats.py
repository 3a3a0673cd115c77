"""`StoreStatsService`: put counts sampled every second for putTps (10 s / 60 s / 600 s windows), the distribution of
put times (until the flush and replica futures complete) in 13 buckets, and once a minute the `[STORETPS]` and
`[PAGECACHERT]` lines in store.log with Apache's wording."""
from __future__ import annotations

import threading
import time
from collections import deque

from emulator.logs import store_log

SAMPLING_INTERVAL_S = 1.0
MAX_RECORDS_OF_SAMPLING = 60 * 10
PRINT_TPS_INTERVAL_S = 60
DESC = ("[<=0ms]", "[0~10ms]", "[10~50ms]", "[50~100ms]", "[100~200ms]", "[200~500ms]", "[500ms~1s]", "[1~2s]",
        "[2~3s]", "[3~4s]", "[4~5s]", "[5~10s]", "[10s~]")
BOUNDS = (0, 10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10000)


def _bucket(value_ms: float) -> int:
    if value_ms <= 0:
        return 0
    for i, bound in enumerate(BOUNDS[1:], start=1):
        if value_ms < bound:
            return i
    return 12


class StoreStats(threading.Thread):
    def __init__(self) -> None:
        super().__init__(name="StoreStatsService", daemon=True)
        self.boot_ms = int(time.time() * 1000)
        self.put_times_total = 0
        self.put_size_total = 0
        self.put_failed = 0
        self.put_entire_time_max = 0
        self.get_found = self.get_miss = self.get_transferred = 0
        self.distribution = [0] * 13
        self.last_distribution: list[int] | None = None
        self._samples: deque[tuple[float, int]] = deque(maxlen=MAX_RECORDS_OF_SAMPLING + 1)
        self._get_samples: deque[tuple[float, int, int, int]] = deque(maxlen=MAX_RECORDS_OF_SAMPLING + 1)
        self._last_print = time.time()
        self._stopped = threading.Event()

    def on_put(self, size: int) -> None:
        self.put_times_total += 1
        self.put_size_total += size

    def on_put_done(self, elapsed_ms: float, ok: bool) -> None:
        self.distribution[_bucket(elapsed_ms)] += 1
        if elapsed_ms > self.put_entire_time_max:
            self.put_entire_time_max = int(elapsed_ms)
        if not ok:
            self.put_failed += 1

    def tps(self, window: int) -> str:
        samples = self._samples
        if len(samples) > window:
            (t0, n0), (t1, n1) = samples[-(window + 1)], samples[-1]
            return str((n1 - n0) / ((t1 - t0) * 1000) * 1000 if t1 > t0 else 0.0)
        return ""

    def put_tps(self) -> str:
        return f"{self.tps(10)} {self.tps(60)} {self.tps(600)}"

    def distribution_string(self) -> str:
        times = self.last_distribution
        if times is None:
            return "null"
        return "".join(f"{d}:{v} " for d, v in zip(DESC, times, strict=True))

    def shutdown(self) -> None:
        self._stopped.set()

    def run(self) -> None:
        store_log.info("StoreStatsService service started")
        while not self._stopped.wait(SAMPLING_INTERVAL_S):
            self._samples.append((time.time(), self.put_times_total))
            if time.time() > self._last_print + PRINT_TPS_INTERVAL_S:
                self._last_print = time.time()
                self._print()

    def _print(self) -> None:
        store_log.info("[STORETPS] put_tps %s get_found_tps %s get_miss_tps %s get_transfered_tps %s",
                       self.tps(PRINT_TPS_INTERVAL_S), "0.0", "0.0", "0.0")
        times, self.distribution = self.distribution, [0] * 13
        self.last_distribution = times
        text = "".join(f"{d}:{v} " for d, v in zip(DESC, times, strict=True))
        store_log.info("[PAGECACHERT] TotalPut %d, PutMessageDistributeTime %s", sum(times), text)
