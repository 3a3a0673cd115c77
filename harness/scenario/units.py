"""Durations (`30s`, `2m`, `1h`, `500ms`) and sizes (`64MiB`, `2GiB`, `128B`) as written in scenario files.

A bare number is refused for both: `30` could be seconds or milliseconds, bytes or MiB, and a scenario is read by
people who must not have to guess. Sizes are binary (`KiB`, `MiB`, `GiB`); `MB` is refused for the same reason.

Example::

    parse_duration("2m")      # 120.0 (seconds)
    parse_size("64MiB")       # 67108864 (bytes)
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from harness.scenario.reader import shorten

DURATION_UNITS: dict[str, float] = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
SIZE_UNITS: dict[str, int] = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}
DURATION_RE = re.compile(r"^\s*(\d{1,12}(?:\.\d{1,9})?)\s*(ms|s|m|h)\s*$")
SIZE_RE = re.compile(r"^\s*(\d{1,16}(?:\.\d{1,9})?)\s*(B|KiB|MiB|GiB|TiB)\s*$")
MAX_DURATION_S = 7 * 24 * 3600.0
"""No duration in a scenario may pass a week: a longer one is a typo that would keep a run (and its faults) alive."""
MAX_SIZE = 1024**4
"""No size may pass 1TiB (a store image is a sparse file of that size; a message or buffer never comes close)."""
DURATION_ALLOWED = "a number with a unit: " + ", ".join(f"N{u}" for u in DURATION_UNITS)
SIZE_ALLOWED = "a number with a unit: " + ", ".join(f"N{u}" for u in SIZE_UNITS)


def parse_duration(text: object) -> float:
    """Seconds of a duration string. Raises `ValueError` naming the accepted forms."""
    seconds = _number_times_unit(text, "duration", DURATION_RE, DURATION_UNITS, DURATION_ALLOWED)
    if seconds > MAX_DURATION_S:
        raise ValueError(f"{shorten(repr(text))} is too long; allowed: at most {MAX_DURATION_S / 3600:g}h")
    return seconds


def parse_size(text: object) -> int:
    """Bytes of a size string. Raises `ValueError` naming the accepted forms."""
    value = _number_times_unit(text, "size", SIZE_RE, SIZE_UNITS, SIZE_ALLOWED)
    if value > MAX_SIZE:
        raise ValueError(f"{shorten(repr(text))} is too large; allowed: at most 1TiB")
    if value != int(value):
        raise ValueError(f"{shorten(repr(text))} is not a whole number of bytes")
    return int(value)


def _number_times_unit(text: object, what: str, pattern: re.Pattern[str], units: Mapping[str, float],
                       allowed: str) -> float:
    """The number of `text` times the factor of its unit. Raises `ValueError` when `text` is not a string of the
    form `pattern` (a number, then one of `units`)."""
    m = pattern.match(text) if isinstance(text, str) else None
    if m is None:
        raise ValueError(f"{shorten(repr(text))} is not a {what}; allowed: {allowed}")
    return float(m[1]) * units[m[2]]


def format_duration(seconds: float) -> str:
    """The shortest exact string for `seconds` (`parse_duration(format_duration(x)) == x` for ms multiples)."""
    ms = round(seconds * 1000)
    if ms == 0:
        return "0s"
    for unit, factor in (("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms and ms % factor == 0:
            return f"{ms // factor}{unit}"
    return f"{ms}ms"


def format_size(n: int) -> str:
    """The largest binary unit that divides `n` exactly (`parse_size(format_size(n)) == n`)."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        if n and n % SIZE_UNITS[unit] == 0:
            return f"{n // SIZE_UNITS[unit]}{unit}"
    return f"{n}B"
