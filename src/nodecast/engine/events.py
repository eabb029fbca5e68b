"""A tiny deterministic discrete-event kernel (SimPy-style, callbacks instead of generators).

The paper's simulator (Stanisic et al., section 3) runs StarPU's own code on
SimGrid's threads; nodecast replaces both by one event loop, because the
runtime model here is plain Python. The kernel is deliberately small:

* ``Environment.now`` is the simulated time in seconds (float64);
* the queue is a binary heap of ``(time_s, seq, callback, arg)`` entries, where
  ``seq`` is a global counter: events at the same time run first-in first-out
  and callbacks are never compared, so a run is bit-for-bit deterministic;
* there is no cancellation: an owner that wants to drop an event keeps a
  version number and ignores stale entries when they pop (SimPy does the same
  for interrupts), which keeps ``schedule`` one ``heappush``.

Hot loops (``nodecast.runtime.simulation``) may push onto ``env.queue`` directly with
``heapq.heappush(queue, (t, next(env.counter), cb, arg))``; that is the same
operation as ``schedule_at`` without the checks.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

Callback = Callable[[Any], None]


class EmptySchedule(Exception):
    """Raised by ``step`` when no event is left."""


class Environment:
    """Simulated clock plus a heap of pending callbacks.

    Attributes:
        now: current simulated time (s).
        queue: the heap of ``(time_s, seq, callback, arg)`` entries.
        counter: the ``itertools.count`` that numbers entries (FIFO tie-break).
    """

    __slots__ = ("now", "queue", "counter", "processed")

    def __init__(self, start_s: float = 0.0) -> None:
        self.now = float(start_s)
        self.queue: list[tuple[float, int, Callback, Any]] = []
        self.counter = itertools.count()
        self.processed = 0

    def schedule_at(self, time_s: float, callback: Callback, arg: Any = None) -> None:
        """Run ``callback(arg)`` at simulated time ``time_s``.

        Raises ValueError if ``time_s`` lies in the past (time never goes backwards).
        """
        if time_s < self.now:
            msg = f"cannot schedule at {time_s!r} s: the clock is already at {self.now!r} s"
            raise ValueError(msg)
        heappush(self.queue, (time_s, next(self.counter), callback, arg))

    def schedule(self, delay_s: float, callback: Callback, arg: Any = None) -> None:
        """Run ``callback(arg)`` after ``delay_s`` seconds. Raises ValueError if the delay is negative."""
        if delay_s < 0:
            msg = f"negative delay {delay_s!r} s"
            raise ValueError(msg)
        heappush(self.queue, (self.now + delay_s, next(self.counter), callback, arg))

    def peek(self) -> float:
        """Time of the next event, or ``inf`` when the queue is empty."""
        return self.queue[0][0] if self.queue else float("inf")

    def step(self) -> None:
        """Process the next event. Raises EmptySchedule when there is none."""
        if not self.queue:
            raise EmptySchedule
        time_s, _, callback, arg = heappop(self.queue)
        self.now = time_s
        self.processed += 1
        callback(arg)

    def run(self, until_s: float | None = None) -> None:
        """Process events until the queue is empty, or until the next event lies beyond ``until_s``.

        With ``until_s`` the clock is left at ``until_s`` (events at exactly
        ``until_s`` are processed).
        """
        queue = self.queue
        pop = heappop
        n = 0
        if until_s is None:
            while queue:
                time_s, _, callback, arg = pop(queue)
                self.now = time_s
                n += 1
                callback(arg)
        else:
            if until_s < self.now:
                msg = f"until ({until_s!r} s) lies before the current time ({self.now!r} s)"
                raise ValueError(msg)
            while queue and queue[0][0] <= until_s:
                time_s, _, callback, arg = pop(queue)
                self.now = time_s
                n += 1
                callback(arg)
            self.now = until_s
        self.processed += n
