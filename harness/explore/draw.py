"""Drawing schedules from the fault space. Schedule `i` of seed `s` is drawn by its own `random.Random(f"{s}:{i}")`
(a string seed is hashed the same way in every process), so the same seed draws the same schedules whatever ran
before, and a schedule can be drawn again alone. Durations are whole tenths of a second, rates whole sends/s. A
window never puts two faults on the same target; each fault is a (kind, target) pair drawn by its choice's weight,
its parameters drawn from their lists and ranges."""
from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any

from harness.explore.schedule import DrawnFault, Schedule, Window
from harness.explore.spec import DurationRange, FaultChoice, Space, is_range


def rng_of(seed: int, index: int) -> random.Random:
    return random.Random(f"{seed}:{index}")


def draw(space: Space, index: int) -> Schedule:
    """Schedule `index` (from 0) of the space's seed."""
    rng = rng_of(space.seed, index)
    windows = []
    for i in range(rng.randint(space.windows.min, space.windows.max)):
        gap = seconds(rng, space.lead if i == 0 else space.gap)
        length = seconds(rng, space.duration)
        count = rng.randint(space.faults_per_window.min, space.faults_per_window.max)
        windows.append(Window(gap, length, tuple(pick_faults(rng, space.faults, count))))
    rate = None
    if space.rate is not None:
        rate = min(max(float(round(rng.uniform(space.rate.min, space.rate.max))), space.rate.min), space.rate.max)
    return Schedule(tuple(windows), space.after, rate)


def schedules(space: Space, start: int = 0) -> Iterator[tuple[int, Schedule]]:
    i = start
    while True:
        yield i, draw(space, i)
        i += 1


def seconds(rng: random.Random, r: DurationRange) -> float:
    return round(rng.uniform(r.min, r.max), 1)


def pick_faults(rng: random.Random, choices: list[FaultChoice], count: int) -> list[DrawnFault]:
    """`count` faults (fewer when the space has fewer distinct targets), no two on one target."""
    pairs = [(ci, t) for ci, c in enumerate(choices) for t in dict.fromkeys(c.targets)]
    weights = [choices[ci].weight / len(set(choices[ci].targets)) for ci, _ in pairs]
    out: list[DrawnFault] = []
    used: set[str] = set()
    while len(out) < count:
        open_ = [(p, w) for p, w in zip(pairs, weights, strict=True) if p[1] not in used]
        if not open_:
            break
        (ci, target), = rng.choices([p for p, _ in open_], [w for _, w in open_])
        used.add(target)
        c = choices[ci]
        out.append(DrawnFault(c.kind, target, draw_params(rng, c.params), ci))
    return out


def draw_params(rng: random.Random, params: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in sorted(params.items()):
        if isinstance(value, list):
            out[key] = rng.choice(value)
        elif is_range(value):
            lo, hi = value["min"], value["max"]
            out[key] = rng.randint(lo, hi) if isinstance(lo, int) and isinstance(hi, int) \
                else round(rng.uniform(lo, hi), 2)
        else:
            out[key] = value
    return out
