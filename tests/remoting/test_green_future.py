"""`GreenResponseFuture`, the wait handle of a request under gevent: woken by its completion from another greenlet,
never before its deadline otherwise, and a completion that comes after the wait gave up never wakes the greenlet
later (it would resume a greenlet that is waiting for something else). Run on gevent's hub in this process."""
from __future__ import annotations

import gevent
from gevent import monkey
from gevent.event import Event
from gevent.hub import Waiter, get_hub

import time

import pytest

from remoting import connection
from remoting.command import RemotingCommand
from remoting.connection import GreenResponseFuture


@pytest.fixture(autouse=True)
def hub_api(monkeypatch):
    monkeypatch.setattr(connection, "_get_hub", get_hub)
    monkeypatch.setattr(connection, "_Waiter", Waiter)
    monkeypatch.setattr(connection, "_os_get_ident", monkey.get_original("_thread", "get_ident"))


def test_a_completion_before_the_wait_returns_at_once() -> None:
    future = GreenResponseFuture(1, time.monotonic() + 5)
    answer = RemotingCommand(code=0, opaque=1)
    future.complete(answer)
    assert future.wait_until(future.deadline) is True
    assert future.response is answer and future.send_ok


def test_a_completion_from_another_greenlet_wakes_the_waiter() -> None:
    future = GreenResponseFuture(2, time.monotonic() + 30)
    answer = RemotingCommand(code=0, opaque=2)
    waiter = gevent.spawn(future.wait_until, future.deadline)
    gevent.spawn(lambda: (gevent.sleep(0.01), future.complete(answer)))
    assert waiter.get(timeout=10) is True
    assert future.response is answer and time.monotonic() < future.deadline


def test_without_a_completion_the_wait_ends_at_the_deadline_not_before() -> None:
    deadline = time.monotonic() + 0.05
    future = GreenResponseFuture(3, deadline)
    assert future.wait_until(deadline) is False
    assert time.monotonic() >= deadline


def test_a_completion_after_the_wait_gave_up_does_not_wake_the_greenlet_later() -> None:
    future = GreenResponseFuture(4, time.monotonic() + 0.02)
    woken_by: list[str] = []

    def waits_then_waits_again() -> None:
        assert future.wait_until(future.deadline) is False
        event = Event()
        gevent.spawn(lambda: (gevent.sleep(0.05), woken_by.append("event"), event.set()))
        future.complete(RemotingCommand(code=0, opaque=4))  # late: must not resume this greenlet's next wait
        event.wait(10)
        woken_by.append("resumed")

    gevent.spawn(waits_then_waits_again).get(timeout=10)
    assert woken_by == ["event", "resumed"]
