"""The store statistics lines operators grep for, in StoreStatsService's exact format."""
from __future__ import annotations

import logging

from emulator.store.stats import StoreStats


def test_pagecachert_line_and_put_tps(caplog):
    stats = StoreStats()
    for elapsed in (0, 5, 30, 5200, 12000):
        stats.on_put(100)
        stats.on_put_done(elapsed, True)
    with caplog.at_level(logging.INFO, logger="RocketmqStore"):
        stats._print()
    line = next(r.getMessage() for r in caplog.records if "[PAGECACHERT]" in r.getMessage())
    assert line == ("[PAGECACHERT] TotalPut 5, PutMessageDistributeTime [<=0ms]:1 [0~10ms]:1 [10~50ms]:1 "
                    "[50~100ms]:0 [100~200ms]:0 [200~500ms]:0 [500ms~1s]:0 [1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 "
                    "[5~10s]:1 [10s~]:1 ")
    assert stats.distribution == [0] * 13 and stats.put_entire_time_max == 12000
    assert stats.put_tps() == "  "  # no samples yet, as a broker right after boot
