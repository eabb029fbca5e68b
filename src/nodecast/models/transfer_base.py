"""What the transfer models share: the groups of transfer classes and the dispatch of ``TransferModelBase``.

``TransferModelBase`` projects every copy of a trace per transfer class, per
GPU and per link, vectorized, and adds each class's 1-byte cost L+O
(``nodecast.models.one_byte``); a model (``nodecast.models.transfer``,
``baselines``) says only how long ``n`` bytes take over a link, through the
driver's pageable staging, and inside one GPU. Copies whose host memory kind
the trace does not record are projected both ways (``unknown_host_note``).
Seconds, bytes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from nodecast.errors import InputError
from nodecast.machines.topology import bottleneck
from nodecast.models.base import ModelResult
from nodecast.models.link_time import Direction, describe_link
from nodecast.models.one_byte import OneByteCost, bytes_float64, resolve_one_byte
from nodecast.notes import HOST_MEMORY_UNKNOWN, Note
from nodecast.traces.kinds import HOST_MEMORY_KINDS, TransferClass
from nodecast.words import plural

if TYPE_CHECKING:
    from collections.abc import Callable

    from nodecast.machines.schema import Link, Machine
    from nodecast.traces.trace import Trace

TC = TransferClass

#: Host copies the GPU performs by reading host memory (host->device).
HOST_READ = (TC.HTOD_PAGEABLE, TC.HTOD_PINNED, TC.HTOD_MANAGED, TC.HTOD_UNKNOWN)
#: Host copies the GPU performs by writing host memory (device->host).
HOST_WRITE = (TC.DTOH_PAGEABLE, TC.DTOH_PINNED, TC.DTOH_MANAGED, TC.DTOH_UNKNOWN)
#: Copies staged through a pinned buffer by the driver (eq. 9, ``nodecast.models.pageable``).
PAGEABLE = (TC.HTOD_PAGEABLE, TC.DTOH_PAGEABLE)
#: Host copies whose host memory kind (pinned or pageable) the trace does not record.
UNKNOWN_HOST = (TC.HTOD_UNKNOWN, TC.DTOH_UNKNOWN)
#: Copies between two GPUs.
GPU_TO_GPU = (TC.PEER, TC.DTOD_MANAGED)
#: Unified-memory migrations.
MANAGED = (TC.HTOD_MANAGED, TC.DTOH_MANAGED, TC.DTOD_MANAGED)
#: Every class the transfer models project.
HANDLED = (*HOST_READ, *HOST_WRITE, TC.DTOD, *GPU_TO_GPU)


def _seconds(value: float) -> str:
    """A duration in the unit the tables use (``1.25 ms``)."""
    from nodecast.units import fmt_seconds

    return fmt_seconds(value)


#: How every note about copies of unrecorded host memory starts (``unknown_host_note``).
UNKNOWN_HOST_NOTE = "whose host memory (pinned or pageable) the trace does not record"


def unknown_host_note(unknown: np.ndarray, stated: str | None, pageable_s: np.ndarray,
                      pinned_s: np.ndarray | None) -> str:
    """The note on the copies of unrecorded host memory (mask ``unknown``): how they were projected, both totals."""
    what = f"{plural(int(unknown.sum()), 'copy', 'copies')} {UNKNOWN_HOST_NOTE}"
    if stated is not None or pinned_s is None:
        return Note(f"{what}: projected as {stated} (--host-memory {stated})", HOST_MEMORY_UNKNOWN)
    return Note(f"{what}: projected as pageable ({_seconds(float(np.nansum(pageable_s[unknown])))} in all; AHEAD "
                f"section VII: nearly all the applications it traced use pageable memory), "
                f"{_seconds(float(np.nansum(pinned_s[unknown])))} if pinned; both ends are the interval "
                "<model>_low_s/_high_s of -o; state the kind with --host-memory pinned|pageable", HOST_MEMORY_UNKNOWN)


def _isin(classes: np.ndarray, group: tuple[TransferClass, ...]) -> np.ndarray:
    # NOTE: one comparison per class, not a lookup table: a gather by int8 codes costs ~20 comparisons.
    mask = np.zeros(classes.shape, dtype=bool)
    for c in sorted({int(c) for c in group}):
        mask |= classes == c
    return mask


def _class_counts(trace: Trace) -> np.ndarray:
    """Ops of ``trace`` per TransferClass code (int64, indexed by code), computed once per trace (read-only)."""

    def count() -> np.ndarray:
        tc = trace.transfer_class
        out = np.zeros(len(TransferClass), dtype=np.int64)
        if tc.size:
            low, high = int(tc.min()), int(tc.max())
            if low == high:  # one class only (a benchmark, a trace of copies of one kind): no pass per class
                out[low] = tc.size
            else:
                for c in range(low, high + 1):
                    out[c] = np.count_nonzero(tc == c)
        out.flags.writeable = False
        return out

    return trace.memo("transfer-class-counts", count)


def _count(counts: np.ndarray, group: tuple[TransferClass, ...]) -> int:
    """Ops of the classes of ``group``, from ``_class_counts``."""
    return int(sum(int(counts[c]) for c in set(group)))


def group_mask(trace: Trace, group: tuple[TransferClass, ...]) -> np.ndarray:
    """Ops whose class is in ``group``, computed once per trace (read-only)."""
    key = ("transfer-class-group", tuple(sorted(int(c) for c in group)))

    def compute() -> np.ndarray:
        counts = _class_counts(trace)
        present = tuple(c for c in group if counts[c])
        k = _count(counts, present)
        n_ops = len(trace)
        mask = np.ones(n_ops, dtype=bool) if k == n_ops else _isin(trace.transfer_class, present)
        mask.flags.writeable = False
        return mask

    return trace.memo(key, compute)


def _present(values: np.ndarray, size: int) -> np.ndarray:
    """Distinct small non-negative integers in ``values`` (np.unique without the sort/hash)."""
    return np.flatnonzero(np.bincount(values, minlength=size))


def _fresh(values: object, n_ops: int) -> bool:
    """Whether ``values`` is a float64 array of ``n_ops`` that owns its memory (a formula's new result)."""
    return (isinstance(values, np.ndarray) and values.dtype == np.float64 and values.shape == (n_ops,)
            and values.flags.owndata and values.flags.writeable)


class _Filler:
    """Per-op projected times (s) filled one selection of ops at a time; NaN where nothing was filled."""

    def __init__(self, n_ops: int, n: np.ndarray) -> None:
        self.n_ops, self.n = n_ops, n
        self._values: np.ndarray | None = None

    @property
    def values(self) -> np.ndarray:
        """The array (seconds), allocated NaN on first use."""
        if self._values is None:
            self._values = np.full(self.n_ops, np.nan)
        return self._values

    def fill(self, sel: np.ndarray, formula: Callable[[np.ndarray], np.ndarray | None]) -> None:
        """``values[sel] = formula(n[sel])``, unless the formula gives None (bytes -> seconds, elementwise)."""
        k = np.count_nonzero(sel)
        if not k:
            return
        if 2 * k < self.n_ops:
            out = formula(self.n[sel])
            if out is not None:
                self.values[sel] = out
            return
        # NOTE: most ops selected (a benchmark, a trace of copies): the formula over the whole column costs
        # less than gathering the selection and scattering it back; the other ops' values are dropped. An
        # elementwise formula gives every selected op the value it gives it alone.
        out = formula(self.n)
        if out is None:
            return
        if self._values is None and out is not self.n and _fresh(out, self.n_ops):
            if k < self.n_ops:
                np.copyto(out, np.nan, where=~sel)
            self._values = out  # a new array: kept, not copied
        else:
            np.copyto(self.values, out, where=sel)


def _add_per_class(time_s: np.ndarray, lo: OneByteCost, handled: np.ndarray, tc: np.ndarray, present: set[int],
                   every: bool) -> None:
    """``time_s[handled] += L+O of each op's class`` in place (seconds; 0 for a class ``lo`` does not resolve).

    ``present``: the classes of the handled ops; ``every``: whether every op is handled. One masked add per
    distinct value, no gather of the per-op values.
    """
    by_value: dict[float, list[int]] = {}
    for c in sorted(present):
        by_value.setdefault(float(lo.seconds.get(TransferClass(c), 0.0)), []).append(c)
    if len(by_value) == 1:
        (value,) = by_value
        if every:
            time_s += value
        else:
            np.add(time_s, value, out=time_s, where=handled)
        return
    for value, codes in by_value.items():
        np.add(time_s, value, out=time_s, where=handled & _isin(tc, tuple(TransferClass(c) for c in codes)))


class TransferModelBase(ABC):
    """Shared dispatch of the transfer models: per class, per GPU, per link, vectorized.

    Subclasses set the ClassVars and override ``_link_time_s``,
    ``_pageable_time_s`` and ``_dtod_time_s``. ``one_byte_given_s`` (class key
    or ``"all"`` -> seconds) overrides L+O (``nodecast.models.one_byte`` step
    1; ``project(..., one_byte_s=...)`` sets it); ``one_byte_fallback_s`` is
    the value used when nothing else gives one (step 6). ``host_memory``
    (``"pinned"``, ``"pageable"`` or None; ``project(..., host_memory=...)``
    sets it) is the kind of the host memory of the copies whose trace does not
    record it; None projects them both ways (see the module docstring).
    """

    name: ClassVar[str]
    kind: ClassVar[str] = "transfer"
    baseline: ClassVar[bool] = False
    #: The time comes from the machines alone, not from the source's measured time (``base.is_absolute``).
    absolute: ClassVar[bool] = True
    description: ClassVar[str]
    include_latency: ClassVar[bool] = True

    def __init__(self, *, one_byte_fallback_s: float | None = None, one_byte_fallback_label: str = "given default") -> None:
        self.one_byte_fallback_s = one_byte_fallback_s
        self.one_byte_fallback_label = one_byte_fallback_label
        self.one_byte_given_s: dict[str, float] = {}
        self.host_memory: str | None = None

    # -- hooks ----------------------------------------------------------------
    @abstractmethod
    def _link_time_s(self, link: Link, n: np.ndarray, direction: Direction) -> np.ndarray:
        """Time on the wire of copies of ``n`` bytes over ``link``, seconds."""

    def _pageable_time_s(self, link: Link, n: np.ndarray, direction: Direction, target: Machine) -> np.ndarray | None:
        """Time of pageable copies of ``n`` bytes over ``link``, seconds, no L+O (None: like pinned ones)."""
        return None

    @abstractmethod
    def _dtod_time_s(self, n: np.ndarray, target: Machine) -> np.ndarray:
        """Time of device-to-device copies of ``n`` bytes on the target GPU, seconds (no L+O)."""

    def _link_note(self, link: Link) -> str:
        return describe_link(link)

    def _method_notes(self, target: Machine, present: set[int]) -> list[str]:
        return []

    # -- Model protocol -------------------------------------------------------
    def accepts(self, trace: Trace) -> np.ndarray:
        """Boolean mask of the copies this model projects (all but HtoH and unclassified).

        The projection counts the accepted ops by class (``_class_counts``): subclasses do not override this.
        """
        return group_mask(trace, HANDLED)

    def _classes_present(self, trace: Trace) -> list[TransferClass]:
        """Transfer classes of the ops this model accepts (once per trace), in code order."""
        return trace.memo("classes-accepted",
                          lambda: sorted(c for c in set(HANDLED) if _class_counts(trace)[c]))

    def one_byte(self, trace: Trace, source: Machine | None, target: Machine) -> OneByteCost:
        """L+O per class present in ``trace`` (see ``nodecast.models.one_byte``)."""
        present = self._classes_present(trace)

        def machine_key(m: Machine | None) -> tuple[object, ...] | None:
            # what the resolution reads of the source: its name (in the notes), its measured 1-byte costs,
            # and its GPUs, sockets and links (the rates of the latency-bound estimate)
            if m is None:
                return None
            measured = m.measured.one_byte_s if m.measured is not None else {}
            return (m.name, str(m.path), tuple(sorted(measured.items())), repr(m.gpu), repr(m.cpu), repr(m.links))

        given = tuple(sorted(self.one_byte_given_s.items()))
        # The target enters the resolution only through its measured 1-byte costs (and its name beside them):
        # keyed so, the source-scaled models' source-side projection reuses the target-side result.
        measured = target.measured.one_byte_s if target.measured is not None else {}
        target_key = (target.name, tuple(sorted(measured.items()))) if measured else None
        key = ("one-byte", machine_key(source), target_key, tuple(present), given,
               self.one_byte_fallback_s, self.one_byte_fallback_label)
        return trace.memo(key, lambda: resolve_one_byte(
            trace, source, target, present, given_s=dict(given),
            fallback_s=self.one_byte_fallback_s, fallback_label=self.one_byte_fallback_label,
        ))

    def project(self, trace: Trace, source: Machine, target: Machine) -> ModelResult:
        """Projected GPU time on ``target`` of every copy of ``trace`` (NaN for the others).

        The last projection of each model class is kept on the trace (``Trace.memo``, one slot per class, the
        machines compared by identity and the options by value): the source-scaled models
        (``nodecast.models.scaled``) project with their base model what it has just projected itself. The
        arrays are shared: do not modify them in place.
        """
        slot = trace.memo(("last-projection", type(self)), dict)
        key = (id(source), id(target), tuple(sorted(self.one_byte_given_s.items())), self.host_memory,
               self.one_byte_fallback_s, self.one_byte_fallback_label)
        if slot.get("key") == key and slot["machines"][0] is source and slot["machines"][1] is target:
            hit = slot["result"]
            return ModelResult(hit.model, hit.time_s, low_s=hit.low_s, high_s=hit.high_s, notes=list(hit.notes))
        result = self._project(trace, source, target)
        # NOTE: the machines are held so that their ids cannot be reused while the slot names them.
        slot.update(key=key, machines=(source, target), result=result)
        return ModelResult(result.model, result.time_s, low_s=result.low_s, high_s=result.high_s,
                           notes=list(result.notes))

    def _project(self, trace: Trace, source: Machine, target: Machine) -> ModelResult:
        # NOTE: the whole-trace work is sized by what the trace holds: the class counts (once per trace) say
        # which groups have no op (skipped) or every op (their mask is the accepted one), so a trace of one
        # kind of copy costs one pass per formula, with no gather or scatter by mask.
        n_ops = len(trace)
        notes: list[str] = []
        tc = trace.transfer_class
        counts = _class_counts(trace)
        handled = self.accepts(trace)
        n_handled = _count(counts, HANDLED)
        if not n_handled:
            notes.append("no copies this model handles in the trace")
            return ModelResult(self.name, np.full(n_ops, np.nan), notes=notes)

        def within(mask: np.ndarray, group: tuple[TransferClass, ...]) -> np.ndarray | None:
            """``mask`` & the group's ops; None when the group has no op (``mask`` itself when it has every op)."""
            k = _count(counts, group)
            if not k:
                return None
            return mask if k == n_ops else mask & group_mask(trace, group)

        count = target.gpu.count
        n = bytes_float64(trace)
        transfer = _Filler(n_ops, n)  # the projected times, filled per selection

        # NOTE: device columns stay int16 (2 B/op); src/dst are only looked at
        # for the GPU-to-GPU copies, usually few.
        top = max(int(trace["device"].max()), 0) if n_ops else 0
        dev = np.maximum(trace["device"], 0) if top else None
        g2g = within(handled, GPU_TO_GPU)
        one_gpu = handled if g2g is None else handled & ~g2g
        g2g_rows = np.flatnonzero(g2g) if g2g is not None else np.zeros(0, dtype=np.intp)
        src = np.maximum(trace["src_device"][g2g_rows], 0).astype(np.int64)
        dst = np.maximum(trace["dst_device"][g2g_rows], 0).astype(np.int64)
        beyond = (int(np.count_nonzero(one_gpu & (dev >= count))) if top >= count else 0) + \
            int(((src >= count) | (dst >= count)).sum())
        if beyond:
            notes.append(
                f"{plural(beyond, 'copy', 'copies')} ran on GPUs beyond the target's {count}: device i is mapped to "
                f"target GPU i mod {count}"
            )
        dev_t = dev % count if top >= count else dev

        # Host <-> GPU copies over each GPU's host link; pageable ones staged by the driver.
        stated = self.host_memory
        if stated is not None and stated not in HOST_MEMORY_KINDS:
            raise InputError(f"unknown host memory kind {stated!r}", key="--host-memory",
                             hint=f"Known: {', '.join(HOST_MEMORY_KINDS)}")
        unknown = within(one_gpu, UNKNOWN_HOST)
        if unknown is not None and not unknown.any():
            unknown = None
        staged = within(one_gpu, PAGEABLE)
        if stated != "pinned" and unknown is not None:
            staged = unknown if staged is None else staged | unknown
        pinned_alt = np.full(n_ops, np.nan) if stated is None and unknown is not None else None
        links_used: dict[int, Link] = {}
        for direction, group in (("read", HOST_READ), ("write", HOST_WRITE)):
            in_group = within(one_gpu, group)
            if in_group is None:
                continue
            # one GPU in the trace (the common case): no per-GPU split to find
            gpus = (np.array([0]) if in_group.any() else np.array([], int)) if top == 0 else \
                _present(dev_t[in_group], count)
            for g in gpus:
                sel = in_group if len(gpus) == 1 else in_group & (dev_t == g)
                link = target.host_link(int(g))
                links_used[int(g)] = link
                transfer.fill(sel, lambda x, link=link, direction=direction: self._link_time_s(link, x, direction))
                if pinned_alt is not None:
                    np.copyto(pinned_alt, transfer.values, where=sel & unknown)
                if staged is not None:
                    transfer.fill(sel & staged, lambda x, link=link, direction=direction:
                                  self._pageable_time_s(link, x, direction, target))
        for g, link in sorted(links_used.items()):
            notes.append(f"gpu{g} host link on {target.name}: {self._link_note(link)}")

        dtod = within(one_gpu, (TC.DTOD,))
        if dtod is not None and dtod.any():
            transfer.fill(dtod, lambda x: self._dtod_time_s(x, target))
        time_s = transfer.values

        # GPU <-> GPU copies over the route between the two GPUs.
        removed = 0
        if len(g2g_rows):
            src, dst = src % count, dst % count
            same = src == dst
            if same.any():
                rows = g2g_rows[same]
                time_s[rows] = self._dtod_time_s(n[rows], target)
                notes.append(
                    f"{plural(int(same.sum()), 'GPU-to-GPU copy', 'GPU-to-GPU copies')} land on one GPU of "
                    f"{target.name}: projected as device-to-device copies"
                )
            pair = src * count + dst
            for code in _present(pair[~same], count * count):
                s, d = divmod(int(code), count)
                rows = g2g_rows[~same & (pair == code)]
                try:
                    route = target.route(f"gpu{s}", f"gpu{d}")
                except InputError:
                    notes.append(f"no route between gpu{s} and gpu{d} on {target.name}: "
                                 f"{plural(len(rows), 'copy', 'copies')} not projected")
                    time_s[rows] = np.nan
                    handled = handled.copy() if not removed else handled  # the accepted mask is shared (memo)
                    handled[rows] = False
                    removed += len(rows)
                    continue
                link = bottleneck(route)
                time_s[rows] = self._link_time_s(link, n[rows], "write")
                hops = " -> ".join(lk.id for lk in route)
                notes.append(f"gpu{s} -> gpu{d} on {target.name}: route {hops}; slowest {self._link_note(link)}")

        present = {int(c) for c in self._classes_present(trace)} if not removed else \
            {int(c) for c in _present(tc[handled], len(TC))}
        if present & {int(c) for c in MANAGED}:
            k = int((handled & group_mask(trace, MANAGED)).sum())
            notes.append(
                f"{plural(k, 'unified-memory migration')} projected like explicit copies over the same link "
                "(eq. 10); page-fault and migration-policy costs are not modelled"
            )
        notes.extend(self._method_notes(target, present))

        lo = None
        every = n_handled - removed == n_ops
        if self.include_latency:
            lo = self.one_byte(trace, source, target)
            notes.extend(lo.notes())
            _add_per_class(time_s, lo, handled, tc, present, every)
        else:
            notes.append("L+O (1-byte cost) left out")

        # handled ops are all copies (HANDLED has no NOT_A_TRANSFER), so the copies left are the rest
        skipped = (n_ops - int(counts[TC.NOT_A_TRANSFER])) - (n_handled - removed)
        if skipped:
            notes.append(f"{plural(skipped, 'copy', 'copies')} of kind HtoH or unclassified not projected (NaN)")
        low = high = None
        if unknown is not None:
            if pinned_alt is not None:
                if lo is not None:
                    _add_per_class(pinned_alt, lo, handled, tc, present, every)
                low = np.fmin(time_s, np.where(unknown, pinned_alt, time_s))
                high = np.fmax(time_s, np.where(unknown, pinned_alt, time_s))
            notes.append(unknown_host_note(unknown, stated, time_s, pinned_alt))
        return ModelResult(self.name, time_s, low_s=low, high_s=high, notes=notes)
