"""OpenSchedule: slots at the rate, never dropped when the sender is late (each keeps its intended time), rate
changes at a given instant keep the old rate's owed slots; the golden-ratio stagger spreads users."""
from __future__ import annotations

import pytest

from loads.schedule import OpenSchedule, stagger

S = 1_000_000_000
T0 = 1_700_000_000 * S


def test_slots_come_at_the_rate_from_the_anchor():
    s = OpenSchedule(rate_per_user=10.0, start_ns=T0, offset=0.5)
    assert [s.advance() for _ in range(3)] == [T0 + 50_000_000, T0 + 150_000_000, T0 + 250_000_000]
    assert s.taken == 3


def test_a_late_sender_owes_every_slot_and_each_keeps_its_intended_time():
    s = OpenSchedule(rate_per_user=100.0, start_ns=T0)
    stall_end = T0 + 2 * S  # the sender was stuck for 2 s
    assert s.owed(stall_end) == 201  # slots at 0, 10 ms, ..., 2000 ms
    intended = [s.advance() for _ in range(201)]
    assert intended == [T0 + k * 10_000_000 for k in range(201)]
    assert all(stall_end - t >= 0 for t in intended)  # each one's latency will include what was left of the stall
    assert s.owed(stall_end) == 0 and s.due_ns == T0 + 201 * 10_000_000


def test_rate_change_keeps_owed_slots_of_the_old_rate_then_follows_the_new():
    s = OpenSchedule(rate_per_user=10.0, start_ns=T0)
    s.advance()  # slot at T0 taken; slots at 100..900 ms not yet
    s.set_rate(100.0, at_ns=T0 + S)
    owed = [s.advance() for _ in range(9)]
    assert owed == [T0 + k * 100_000_000 for k in range(1, 10)]
    assert [s.advance() for _ in range(3)] == [T0 + S, T0 + S + 10_000_000, T0 + S + 20_000_000]
    assert s.rate == pytest.approx(100.0)


def test_rate_zero_pauses_and_a_later_rate_resumes():
    s = OpenSchedule(rate_per_user=1.0, start_ns=T0)
    s.set_rate(0.0, at_ns=T0 - 1)  # before the first slot: nothing owed
    assert s.due_ns is None and s.owed(T0 + 10 * S) == 0
    with pytest.raises(RuntimeError):
        s.advance()
    s.set_rate(2.0, at_ns=T0 + 10 * S)
    assert s.advance() == T0 + 10 * S


def test_stagger_spreads_any_number_of_users():
    for n in (2, 7, 64):
        offsets = sorted(stagger(i) for i in range(n))
        gaps = [b - a for a, b in zip(offsets, offsets[1:], strict=False)] + [1 - offsets[-1] + offsets[0]]
        assert max(gaps) < 3.0 / n  # no clumping: the widest gap is within a small factor of even spacing
    with pytest.raises(ValueError):
        OpenSchedule(1.0, T0, offset=1.0)
