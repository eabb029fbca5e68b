"""The source run as calibration: measured GPU times scaled by a physical model's target/source ratio.

An absolute model (``ahead``, ``peak-bandwidth``) predicts a copy's time on
the target from data sheets alone, so any error of the data sheets or of the
model (a link that delivers 98 % of its framing-limited rate, a host copy
faster or slower than the catalogue says, a driver's fixed cost) lands in the
projection whole. The source trace has measured each copy on the source node;
a model *M* predicts both nodes. The source-scaled model keeps the measured
time and applies only what *M* says changes between the nodes::

    T_target(op) = T_measured_on_source(op) * M(op, target) / M(op, source)

per copy, with the same options, 1-byte cost resolution and host-memory
assumption on both sides. Consequences a user can rely on:

* ``--from X --to X`` gives back the source times exactly (the ratio is 1),
  where an absolute model lands wherever the data sheets put it;
* an error of *M* that source and target share (a framing the model
  undercounts on both NVLink nodes, the same driver's chunking) cancels; what
  remains is *M*'s error on the *change* between the nodes;
* the source's own oddities (cache effects of the benchmark, a slow first
  copy, run-to-run noise) are carried over to the target, which an absolute
  model would not do.

The source side is calibrated by the run too where the base model has a
parameter the source trace measures better than the source's machine file:
the host copy rate of pageable copies (``nodecast.models.pageable``). The
pageable copies of at least three chunks that are host-bound give one rate
each (``pageable.host_copy_rates``); their median, per direction, replaces the
source's rate in ``M(op, source)``, with a note. Otherwise a catalogue rate
that the source's copies do not show (Titan's host-to-device copies stage at
2.6 GB/s, its catalogue says 3.83 from its device-to-host copies) would scale
every projection by the catalogue's error instead of cancelling it. Where the
target keeps the source's host (``machines.compose.same_host``: ``--to``
naming a GPU alone), the rate replaces the target's too: its host is the one
the run measured.

Which to use when (docs/transfers.md says so too): the scaled model when a trace of
the source exists and the target is a change of parts that *M* describes
(another link, GPU, host); the absolute model when the source's times are not
representative of the target's conditions (a run on a loaded node, copies
whose time on the source was set by something the target does not share).

Ops the base model does not project stay NaN; copies whose source-side
projection is 0 or NaN, or whose measured time is not a number > 0, take the
absolute projection, with a note saying how many.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from nodecast.machines.compose import same_host
from nodecast.machines.schema import Measured
from nodecast.models import pageable
from nodecast.models.base import ModelResult
from nodecast.models.baselines import PeakBandwidthModel
from nodecast.models.transfer import AheadModel
from nodecast.models.transfer_base import (UNKNOWN_HOST, UNKNOWN_HOST_NOTE, TransferModelBase, group_mask,
                                           unknown_host_note)
from nodecast.words import plural
from nodecast.traces.kinds import TransferClass

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine
    from nodecast.traces.trace import Trace

_STAGED = {"read": TransferClass.HTOD_PAGEABLE, "write": TransferClass.DTOH_PAGEABLE}


def measured_seconds(trace: Trace) -> np.ndarray:
    """GPU time of every op measured on the source, s, once per trace (``Trace.memo``; read-only)."""

    def compute() -> np.ndarray:
        seconds = trace.duration_ns.astype(np.float64)
        seconds *= 1e-9
        seconds.flags.writeable = False
        return seconds

    return trace.memo("measured-seconds", compute)


class SourceScaledModel:
    """``T_measured * M(target) / M(source)`` for the copies the base transfer model ``M`` projects."""

    name: ClassVar[str]
    kind: ClassVar[str] = "transfer"
    baseline: ClassVar[bool] = False
    description: ClassVar[str]
    #: Marks the family: it needs the source's measured times (curves of synthetic sizes leave it out).
    source_scaled: ClassVar[bool] = True
    base_factory: ClassVar[type[TransferModelBase]]

    def __init__(self) -> None:
        self.base = self.base_factory()

    # The projector sets these on every model that has them; they belong to the base model.
    @property
    def one_byte_given_s(self) -> dict[str, float]:
        """1-byte costs given by the user (see ``TransferModelBase``)."""
        return self.base.one_byte_given_s

    @one_byte_given_s.setter
    def one_byte_given_s(self, value: dict[str, float]) -> None:
        self.base.one_byte_given_s = value

    @property
    def host_memory(self) -> str | None:
        """The stated host memory kind of copies the trace does not record (see ``TransferModelBase``)."""
        return self.base.host_memory

    @host_memory.setter
    def host_memory(self, value: str | None) -> None:
        self.base.host_memory = value

    def accepts(self, trace: Trace) -> np.ndarray:
        """The copies the base model projects."""
        return self.base.accepts(trace)

    def project(self, trace: Trace, source: Machine, target: Machine) -> ModelResult:
        """Measured source time of every copy times the base model's target/source ratio (NaN elsewhere)."""
        on_target = self.base.project(trace, source, target)
        if not on_target.handled.any():
            return ModelResult(self.name, on_target.time_s, notes=on_target.notes)
        measured = measured_seconds(trace)
        rates = self._source_copy_rates(trace, source, measured) if getattr(self.base, "pipelined_staging", False) \
            else {}
        on_source, source_notes = self._calibrated(trace, source, source, rates)
        if target == source:  # the same node: what the run calibrates holds on both sides, and the ratio is 1
            on_target = on_source
        elif rates and same_host(source, target):
            # B keeps A's host (another GPU only): the host copy rate the run measured is B's too, so that it
            # cancels in the ratio instead of B staging at the catalogue's rate and A at the measured one.
            on_target, _ = self._calibrated(trace, source, target, rates)
            source_notes = [*source_notes, f"the same rate{'s' if len(rates) > 1 else ''} on {target.name}, "
                                           f"which has {source.name}'s host"]
        handled = on_target.handled
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = on_target.time_s / on_source.time_s
        usable = handled & np.isfinite(ratio) & (on_source.time_s > 0) & np.isfinite(measured) & (measured > 0)
        # time_s = where(usable, measured * ratio, on_target), formed in the ratio's array: no other whole-trace one
        time_s = np.multiply(measured, ratio, out=ratio)
        np.copyto(time_s, on_target.time_s, where=~usable)
        notes = [f"time measured on {source.name} x ({self.base.name} on {target.name}) / ({self.base.name} on "
                 f"{source.name}), per copy: the source run as calibration (nodecast.models.scaled)", *source_notes]
        fallback = int(np.count_nonzero(handled & ~usable))
        if fallback:
            notes.append(f"{plural(fallback, 'copy', 'copies')} without a measured time > 0 or a source-side "
                         f"projection > 0: {self.base.name}'s absolute projection kept")
        notes.extend(n for n in on_target.notes if UNKNOWN_HOST_NOTE not in n)
        low = high = None
        unknown = handled & group_mask(trace, UNKNOWN_HOST)
        if on_target.low_s is not None and on_target.high_s is not None:
            ends = []
            for t_end, s_end in ((on_target.low_s, on_source.low_s), (on_target.high_s, on_source.high_s)):
                s_end = on_source.time_s if s_end is None else s_end
                with np.errstate(divide="ignore", invalid="ignore"):
                    ends.append(np.where(usable, measured * (t_end / s_end), t_end))
            low = np.fmin(np.fmin(ends[0], ends[1]), time_s)  # time_s is one end; fmin/fmax keep it inside exactly
            high = np.fmax(np.fmax(ends[0], ends[1]), time_s)
            # time_s is the pageable end; the pinned end is the other one of each copy's interval
            pinned = np.where(np.isclose(time_s, low), high, low)
            if unknown.any() and np.allclose(time_s[unknown], pinned[unknown], rtol=1e-9, atol=0.0):
                # Not an assumption the answer rests on: both kinds scale the measured time alike.
                notes.append(f"{plural(int(unknown.sum()), 'copy', 'copies')} {UNKNOWN_HOST_NOTE}: "
                             f"{self.base.name}'s ratio B/A, and so their time on B, is the same either way")
            else:
                notes.append(unknown_host_note(unknown, None, time_s, pinned))
        elif unknown.any():
            notes.append(unknown_host_note(unknown, self.host_memory, time_s, None))
        return ModelResult(self.name, time_s, low_s=low, high_s=high, notes=notes)


    def _calibrated(self, trace: Trace, source: Machine, machine: Machine,
                    rates: dict[str, tuple[float, int]]) -> tuple[ModelResult, list[str]]:
        """The base model on ``machine`` (the source node) with its host copy rate per direction read off the trace."""
        plain = self.base.project(trace, source, machine)
        if not rates:
            return plain, []
        time_s = plain.time_s.copy()
        notes = []
        tc = trace.transfer_class
        for direction, (rate, k) in rates.items():
            m = machine.measured or Measured(origin="the source trace")
            copies = plural(k, "host-bound pageable copy", "host-bound pageable copies")
            facts = {**m.facts, "host_copy": f"median of {copies} of the source trace"}
            calibrated = replace(machine, measured=replace(m, host_copy_bandwidth_bps=rate, facts=facts))
            rows = tc == _STAGED[direction]
            time_s[rows] = self.base.project(trace, source, calibrated).time_s[rows]
            old = machine.host_copy_bandwidth()
            notes.append(f"{_STAGED[direction].key} on {machine.name}: host copy rate {rate / 1e9:.2f} GB/s read off "
                         f"{copies} of the source trace (nodecast.models.pageable), in place of "
                         + (f"{old[0] / 1e9:.2f} GB/s ({old[1]})" if old else "eq. 9"))
        return ModelResult(plain.model, time_s, low_s=plain.low_s, high_s=plain.high_s, notes=plain.notes), notes

    def _source_copy_rates(self, trace: Trace, source: Machine, measured: np.ndarray) -> dict[str, tuple[float, int]]:
        """Direction -> (median host copy rate in bytes/s, copies it comes from) of the trace's pageable copies."""
        tc = trace.transfer_class
        out: dict[str, tuple[float, int]] = {}
        lo = None
        for direction, klass in _STAGED.items():
            rows = np.flatnonzero(tc == klass)
            if not rows.size:
                continue
            if lo is None:
                lo = (self.base.one_byte(trace, source, source).per_op(tc) if self.base.include_latency
                      else np.zeros(len(trace)))
            n = trace["bytes"][rows].astype(np.float64)
            t = measured[rows] - lo[rows]
            dev = np.maximum(trace["device"][rows], 0).astype(np.int64) % source.gpu.count
            rates = np.full(rows.size, np.nan)
            for g in np.unique(dev):
                sel = dev == g
                link = source.host_link(int(g))
                rates[sel] = pageable.host_copy_rates(
                    n[sel], t[sel], lambda x, link=link, d=direction: self.base._link_time_s(link, x, d), direction)
            ok = np.isfinite(rates)
            if ok.any():
                out[direction] = (float(np.median(rates[ok])), int(ok.sum()))
        return out


class AheadScaledModel(SourceScaledModel):
    """The source's measured times scaled by ``ahead``'s target/source ratio."""

    name: ClassVar[str] = "ahead-scaled"
    description: ClassVar[str] = (
        "source run as calibration: measured time x ahead(target) / ahead(source) per copy; --from X --to X gives "
        "the source times back"
    )
    base_factory: ClassVar[type[TransferModelBase]] = AheadModel


class PeakBandwidthScaledModel(SourceScaledModel):
    """The source's measured times scaled by ``peak-bandwidth``'s target/source ratio."""

    name: ClassVar[str] = "peak-bandwidth-scaled"
    baseline: ClassVar[bool] = True
    description: ClassVar[str] = (
        "baseline of the scaled family: measured time x peak-bandwidth(target) / peak-bandwidth(source) per copy"
    )
    base_factory: ClassVar[type[TransferModelBase]] = PeakBandwidthModel
