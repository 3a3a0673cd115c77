"""Java's `HashMap<String, ?>` iteration order. The Java client and broker put header fields and message properties
into a HashMap and write them out in its iteration order, so frames only match the recorded ones byte for byte when
our dicts are ordered the same way: bucket by bucket (`String.hashCode`, spread `h ^ h >>> 16`, table size a power
of two that keeps the load under 0.75), insertion order inside a bucket (resizes keep it)."""
from __future__ import annotations

from functools import lru_cache

DEFAULT_CAPACITY = 16
LOAD_FACTOR = 0.75
_MASK32 = 0xFFFFFFFF


def java_string_hash(s: str) -> int:
    """`String.hashCode()` as an unsigned 32-bit value (over UTF-16 code units, like Java)."""
    h = 0
    if s.isascii():
        for ch in s.encode("ascii"):
            h = (31 * h + ch) & _MASK32
        return h
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK32
    return h


def table_size(count: int, initial_capacity: int = DEFAULT_CAPACITY) -> int:
    """The table length a HashMap created with `initial_capacity` has after `count` puts of distinct keys."""
    cap = 1
    while cap < max(initial_capacity, 1):
        cap <<= 1
    while count > cap * LOAD_FACTOR:
        cap <<= 1
    return cap


@lru_cache(maxsize=4096)
def _order(keys: tuple[str, ...], initial_capacity: int) -> tuple[str, ...]:
    mask = table_size(len(keys), initial_capacity) - 1

    def bucket(key: str) -> int:
        h = java_string_hash(key)
        return (h ^ (h >> 16)) & mask

    return tuple(sorted(keys, key=bucket))  # sorted() is stable: insertion order within a bucket


def java_hashmap_order(keys, initial_capacity: int = DEFAULT_CAPACITY) -> list[str]:
    """The iteration order of a `new HashMap<>(initial_capacity)` into which `keys` were put in the order given.
    (Buckets that Java would turn into trees, 8+ colliding keys in a table of 64+, are not modelled.)"""
    return list(_order(tuple(keys), initial_capacity))


def java_ordered(values: dict[str, str], initial_capacity: int = DEFAULT_CAPACITY) -> dict[str, str]:
    """`values` (in insertion order) re-ordered as Java's HashMap would iterate them."""
    return {k: values[k] for k in _order(tuple(values), initial_capacity)}


def concurrent_table_size(count: int) -> int:
    """The table length of `java.util.Properties`' backing `ConcurrentHashMap(8)` (JDK 9+) after `count` puts: it
    starts at 16 and doubles once the count reaches 3/4 of the table (HashMap: once it exceeds it)."""
    cap = 16
    while count >= cap - (cap >> 2):
        cap <<= 1
    return cap


def java_properties_order(keys) -> list[str]:
    """The iteration order of a `java.util.Properties` (JDK 9+) holding `keys`: ConcurrentHashMap buckets (the same
    spread hash as HashMap). Order inside a bucket after resizes is not modelled."""
    keys = list(keys)
    mask = concurrent_table_size(len(keys)) - 1
    return sorted(keys, key=lambda k: (java_string_hash(k) ^ (java_string_hash(k) >> 16)) & mask)
