"""`PreciseAlarm`: sleeps for greenlets that wake within tens of microseconds of a deadline.

libev's epoll backend (gevent's default loop) rounds every timer wait up to whole milliseconds, so `gevent.sleep`
wakes about 0.5 ms late on average and 1 ms at p99: too coarse for an open-model schedule at thousands of sends/s.
One Linux timerfd (CLOCK_REALTIME, absolute deadline) is armed for the earliest deadline of all sleeping greenlets;
epoll reports it readable when it fires, and the hub then wakes every greenlet whose deadline has come. Off Linux
(no timerfd) it falls back to `gevent.sleep`. Use one alarm per process, created in the thread that runs the hub.
"""
from __future__ import annotations

import gevent
from gevent.hub import Waiter, get_hub

import ctypes
import heapq
import itertools
import os
import time

CLOCK_REALTIME = 0
TFD_NONBLOCK = 0o4000
TFD_CLOEXEC = 0o2000000
TFD_TIMER_ABSTIME = 1
EV_READ = 1
EARLY_NS = 2_000
"""Deadlines this close count as reached."""
NS_PER_S = 1_000_000_000


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


def _nothing() -> None:
    pass


class PreciseAlarm:
    """`sleep_until(deadline_ns)` for many greenlets, on one timerfd."""

    def __init__(self) -> None:
        self._heap: list[list] = []  # [deadline_ns, tiebreak, waiter | None]
        self._count = itertools.count()
        self._armed: int | None = None
        self._fd = -1
        self._libc = None
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC)
        except (OSError, AttributeError):
            return
        if fd < 0:
            return
        self._libc, self._fd = libc, fd
        loop = get_hub().loop
        self._watcher = loop.io(fd, EV_READ, ref=False)
        self._watcher.start(self._on_fire)
        self._keepalive = loop.async_()  # holds the loop open while a greenlet sleeps here

    @property
    def precise(self) -> bool:
        """False when the timerfd is not available and sleeps are `gevent.sleep`."""
        return self._fd >= 0

    def sleep_until(self, deadline_ns: int) -> None:
        """Block the calling greenlet until the wall clock reaches `deadline_ns`."""
        remaining = deadline_ns - time.time_ns()
        if remaining <= EARLY_NS:
            return
        if self._fd < 0:
            gevent.sleep(remaining / NS_PER_S)
            return
        waiter = Waiter()
        entry = [deadline_ns, next(self._count), waiter]
        heapq.heappush(self._heap, entry)
        if self._armed is None or deadline_ns < self._armed:
            self._arm(deadline_ns)
        try:
            waiter.get()
        finally:
            entry[2] = None

    def _arm(self, deadline_ns: int) -> None:
        spec = _Itimerspec(_Timespec(0, 0), _Timespec(deadline_ns // NS_PER_S, deadline_ns % NS_PER_S))
        if self._libc.timerfd_settime(self._fd, TFD_TIMER_ABSTIME, ctypes.byref(spec), None) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        self._armed = deadline_ns
        if not self._keepalive.active:
            self._keepalive.start(_nothing)

    def _on_fire(self) -> None:
        try:
            os.read(self._fd, 8)
        except BlockingIOError:
            pass
        self._armed = None
        now = time.time_ns() + EARLY_NS
        heap = self._heap
        due = []
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            if entry[2] is not None:
                due.append(entry[2])
        while heap and heap[0][2] is None:
            heapq.heappop(heap)
        if heap:
            self._arm(heap[0][0])
        else:
            self._keepalive.stop()  # nobody sleeps: the alarm must not keep the loop alive
        for waiter in due:
            waiter.switch(None)

    def close(self) -> None:
        if self._fd >= 0:
            self._watcher.stop()
            self._keepalive.stop()
            os.close(self._fd)
            self._fd = -1
