"""The broker runtime figures a metrics row carries, read from a GET_BROKER_RUNTIME_INFO table (all values are
strings there; `putTps` is `"<10s> <1m> <10m>"`, sometimes with trailing blanks)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FIGURES = {
    "put_tps": ("putTps", float),
    "commitlog_max_offset": ("commitLogMaxOffset", int),
    "send_queue_size": ("sendThreadPoolQueueSize", int),
    "page_cache_lock_ms": ("pageCacheLockTimeMills", float),
}
NULL_FIGURES: dict[str, Any] = {k: None for k in FIGURES}


def broker_figures(table: Mapping[str, str] | None) -> dict[str, Any]:
    """`put_tps, commitlog_max_offset, send_queue_size, page_cache_lock_ms` (None for what the table lacks)."""
    if not table:
        return dict(NULL_FIGURES)
    out: dict[str, Any] = {}
    for name, (key, kind) in FIGURES.items():
        raw = str(table.get(key, "")).split()
        try:
            out[name] = kind(float(raw[0])) if kind is int else kind(raw[0])
        except (IndexError, ValueError):
            out[name] = None
    return out
