"""Ctrl-C, SIGTERM and SIGHUP stop a run the same way: as a KeyboardInterrupt.

``timeout`` and Slurm stop a job with SIGTERM, a closed terminal sends
SIGHUP. Python's default for both ends the process on the spot, skipping
every cleanup, so a half-written ``.NAME.*.part`` stayed behind. Inside
``stop_on_signals`` all three raise ``Interrupted`` (a KeyboardInterrupt) in
the main thread instead: whatever already cleans up on Ctrl-C (``atomic_path``
removes its temporary file, the command line removes the outputs the run had
finished, a simulation sweep shuts its cluster down) then does so for every
stop, and the command exits 128 + the signal number (130, 143, 129), the
status a shell reports for a process that signal ended.

A signal whose disposition is "ignore" (``nohup`` ignores SIGHUP; a shell
starts background jobs with SIGINT ignored) stays ignored, and a handler
somebody else installed stays theirs.

The exception of a signal can be swallowed by code that catches everything
(a ctypes callback inside numba's compiler prints it as "Exception ignored"
and goes on). The signal is therefore also remembered: ``check`` raises it
again where nodecast is about to finish something (an output about to be
renamed into place, a command about to return), and the "Exception ignored"
report of an exception that is only the stop is not printed.

This module imports nothing heavy: the console script installs the handlers
before numpy and pandas are imported, a second or more in which a Ctrl-C is
likely.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

#: The signals that stop a run (SIGHUP does not exist on Windows).
SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)

#: The first stop signal received inside stop_on_signals (None: none yet).
_received: signal.Signals | None = None


class Interrupted(KeyboardInterrupt):
    """The run was stopped by signal ``signum`` (SIGINT, SIGTERM or SIGHUP)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signal.Signals(signum)


def exit_code(exc: KeyboardInterrupt) -> int:
    """128 + the signal number (130 for a KeyboardInterrupt that no signal of ours raised: Ctrl-C)."""
    return 128 + int(getattr(exc, "signum", signal.SIGINT))


def describe(exc: KeyboardInterrupt) -> str:
    """``interrupted`` (Ctrl-C) or ``stopped by SIGTERM`` (or SIGHUP): the end of the one line a stopped run prints."""
    signum = getattr(exc, "signum", signal.SIGINT)
    return "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"


def _handler(signum: int, frame: Any) -> None:
    global _received  # noqa: PLW0603 (a process-wide signal state, as the signal itself)
    if _received is None:
        _received = signal.Signals(signum)
    raise Interrupted(signum)


def received() -> Interrupted | None:
    """The stop signal received inside ``stop_on_signals`` as its exception, or None when none arrived."""
    return None if _received is None else Interrupted(_received)


def forget() -> None:
    """Forget the stop signal received: for code that handled it on purpose (``record`` lets the recorded program
    stop on Ctrl-C and still writes its trace)."""
    global _received  # noqa: PLW0603
    _received = None


def check() -> None:
    """Raise ``Interrupted`` again when a stop signal arrived whose exception something swallowed."""
    stop = received()
    if stop is not None:
        raise stop


def _quiet_unraisable(previous: Callable[[Any], None]) -> Callable[[Any], None]:
    def hook(unraisable: Any) -> None:
        # The stop is remembered (check) and reported once, by the command line: not as "Exception ignored".
        if _received is not None and isinstance(unraisable.exc_value, KeyboardInterrupt):
            return
        previous(unraisable)

    return hook


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise ``Interrupted`` inside the block (main thread only; a no-op elsewhere).

    Handlers already in place that are not Python's defaults are kept (an
    ignored SIGHUP under ``nohup``, an outer ``stop_on_signals``). On leaving
    the block the previous handlers come back and a received signal is forgotten.
    """
    global _received  # noqa: PLW0603
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    replaced = {}
    for signum in SIGNALS:
        current = signal.getsignal(signum)
        if current is signal.SIG_DFL or current is signal.default_int_handler:
            replaced[signum] = current
    if not replaced:  # an outer stop_on_signals (or the host program) already decides
        yield
        return
    unraisablehook = sys.unraisablehook
    _received = None
    try:
        for signum in replaced:
            signal.signal(signum, _handler)
        sys.unraisablehook = _quiet_unraisable(unraisablehook)
        yield
    finally:
        for signum, previous in replaced.items():
            signal.signal(signum, previous)
        sys.unraisablehook = unraisablehook
        _received = None


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Ignore the stop signals inside the block (main thread only): the cleanup of a stopped run, which a second
    Ctrl-C or a SIGTERM sent to the whole job after the first must not cut short."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            if handler is not None:  # None: a handler not set from Python, which cannot be put back
                signal.signal(signum, handler)
