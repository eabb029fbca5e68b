"""The discrete-event kernel: ordering, determinism, errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodecast.engine.events import EmptySchedule, Environment


def test_events_at_the_same_time_run_first_in_first_out():
    """Callbacks scheduled for the same instant run in the order they were scheduled."""
    env = Environment()
    seen = []
    for i in range(5):
        env.schedule_at(1.0, seen.append, i)
    env.run()
    assert seen == [0, 1, 2, 3, 4]
    assert env.now == 1.0


def test_run_until_stops_and_sets_the_clock():
    """run(until) processes events up to that time and leaves the clock there."""
    env = Environment()
    seen = []
    env.schedule(0.5, seen.append, "a")
    env.schedule(2.0, seen.append, "b")
    env.run(until_s=1.0)
    assert seen == ["a"] and env.now == 1.0
    env.run()
    assert seen == ["a", "b"]


def test_scheduling_in_the_past_is_refused():
    """An event before the current time or a negative delay is a ValueError."""
    env = Environment(start_s=5.0)
    with pytest.raises(ValueError, match="already at 5.0"):
        env.schedule_at(4.0, print)
    with pytest.raises(ValueError, match="negative delay"):
        env.schedule(-1.0, print)


def test_step_on_empty_queue_raises():
    """step() with nothing scheduled raises EmptySchedule; peek() says inf."""
    env = Environment()
    assert env.peek() == float("inf")
    with pytest.raises(EmptySchedule):
        env.step()


@given(st.lists(st.floats(0, 1e3, allow_nan=False), min_size=1, max_size=50))
def test_time_never_goes_backwards(times):
    """Whatever the scheduling order, callbacks see a non-decreasing clock."""
    env = Environment()
    seen: list[float] = []
    for t in times:
        env.schedule_at(t, lambda _: seen.append(env.now))
    env.run()
    assert seen == sorted(seen) and len(seen) == len(times)
