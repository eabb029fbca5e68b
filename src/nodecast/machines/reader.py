"""Typed, path-aware access to a parsed TOML table, shared by every machine-catalogue file kind.

Machine files, GPU data sheets, target (per-SM limits) files and host files
are all read through ``Reader``: each check raises one ``InputError`` naming
the file, the key as a dotted path (``links[2].lanes``, ``peak_flops.fp32``),
what is wrong, and what to do (``hint``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nodecast.errors import InputError

#: Largest bandwidth a catalogue file may give (1 PB/s): some 30x the aggregate L1 bandwidth of an H100
#: (~3e13 B/s), so a larger value is a unit mistake.
MAX_BANDWIDTH_BPS = 1e15


class Reader:
    """Typed access to a TOML table that reports bad values with their key path.

    ``hint`` is the "what to do" of every error (``Fix the machine file``...).
    """

    def __init__(self, path: Path | str, table: Mapping[str, Any], prefix: str,
                 hint: str = "Fix the machine file") -> None:
        self.path = path
        self.table = table
        self.prefix = prefix
        self.hint = hint

    def key(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def fail(self, name: str, reason: str, hint: str | None = None) -> InputError:
        return InputError(reason, path=self.path, key=self.key(name), hint=hint or self.hint)

    def sub(self, name: str, *, required: bool = True) -> Reader | None:
        value = self.table.get(name)
        if value is None:
            if required:
                raise self.fail(name, "missing table")
            return None
        if not isinstance(value, Mapping):
            raise self.fail(name, f"must be a table (got {value!r})")
        return Reader(self.path, value, self.key(name), self.hint)

    def string(self, name: str, *, required: bool = True) -> str | None:
        value = self.table.get(name)
        if value is None:
            if required:
                raise self.fail(name, "missing value")
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(name, f"must be a non-empty string (got {value!r})")
        return value

    def choice(self, name: str, allowed: tuple[str, ...], *, required: bool = True) -> str | None:
        """A string out of ``allowed``."""
        value = self.string(name, required=required)
        if value is not None and value not in allowed:
            raise self.fail(name, f"must be one of {', '.join(allowed)} (got {value!r})")
        return value

    def strings(self, name: str, *, required: bool = True) -> tuple[str, ...] | None:
        """A non-empty list of non-empty strings."""
        value = self.table.get(name)
        if value is None:
            if required:
                raise self.fail(name, "missing value")
            return None
        if (not isinstance(value, list) or not value
                or not all(isinstance(v, str) and v.strip() for v in value)):
            raise self.fail(name, f"must be a non-empty list of non-empty strings (got {value!r})")
        return tuple(value)

    def _number(self, name: str, required: bool, *, zero_ok: bool) -> float | None:
        value = self.table.get(name)
        if value is None:
            if required:
                raise self.fail(name, "missing value")
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(name, f"must be a number (got {value!r})")
        # NOTE: an integer beyond a double's range (10**400) would be an OverflowError in isfinite and float().
        if not -sys.float_info.max <= value <= sys.float_info.max or value < 0 or (value == 0 and not zero_ok):
            rule = "a number >= 0" if zero_ok else "a positive number"
            raise self.fail(name, f"must be {rule} (got {value!r})")
        return float(value)

    def positive(self, name: str, *, required: bool = True) -> float | None:
        """A finite number > 0 (int or float)."""
        return self._number(name, required, zero_ok=False)

    def bandwidth(self, name: str, *, required: bool = True) -> float | None:
        """A bandwidth in bytes/s: a finite number > 0 and at most ``MAX_BANDWIDTH_BPS``."""
        value = self._number(name, required, zero_ok=False)
        if value is not None and value > MAX_BANDWIDTH_BPS:
            raise InputError(f"{value:g} B/s is implausible (more than {MAX_BANDWIDTH_BPS:g} B/s = 1 PB/s)",
                             path=self.path, key=self.key(name), hint="Check the unit: bandwidths are bytes/s")
        return value

    def within(self, name: str, low: float, high: float, unit: str, *, required: bool = True) -> float | None:
        """A finite number in [``low``, ``high``] (plausibility bounds that catch unit mistakes).

        ``unit`` names the expected unit in the error (``Hz``, ``bytes``...).
        """
        value = self._number(name, required, zero_ok=False)
        if value is not None and not low <= value <= high:
            raise self.fail(name, f"{value:g} {unit} is implausible (expected {low:g} to {high:g} {unit})",
                            hint=f"Check the unit ({unit}; SI, e.g. 1.41e9 Hz, 80e9 bytes)")
        return value

    def non_negative(self, name: str, *, required: bool = True) -> float | None:
        """A finite number >= 0 (a latency may be zero)."""
        return self._number(name, required, zero_ok=True)

    def count(self, name: str, *, required: bool = True, high: int | None = None) -> int | None:
        """A positive integer (at most ``high`` when given)."""
        value = self.table.get(name)
        if value is None:
            if required:
                raise self.fail(name, "missing value")
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self.fail(name, f"must be a positive integer (got {value!r})")
        if high is not None and value > high:
            raise self.fail(name, f"{value} is implausible (at most {high})")
        return value

    def integer(self, name: str, low: int, high: int, *, required: bool = True) -> int | None:
        """An integer in [``low``, ``high``] (``low`` may be 0)."""
        value = self.table.get(name)
        if value is None:
            if required:
                raise self.fail(name, "missing value")
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(name, f"must be an integer (got {value!r})")
        if not low <= value <= high:
            raise self.fail(name, f"{value} is implausible (expected {low} to {high})")
        return value

    def unknown_keys(self, allowed: set[str]) -> None:
        extra = sorted(set(self.table) - allowed)
        if extra:
            raise self.fail(extra[0], f"unknown key (allowed: {', '.join(sorted(allowed))})")
