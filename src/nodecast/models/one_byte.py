"""The 1-byte cost L+O of AHEAD's eqs. 9-10, per transfer class, with its provenance.

AHEAD measures latency plus overhead together as the GPU time of a 1-byte
transfer (paper line 336, eq. 1 at line 171) and, when the target node is not
available, uses the one measured on the source node: "the changes in the fixed
overhead between different machines varies slightly compared to changes in the
link bandwidth" (lines 708-715). Device-to-device copies get their own 1-byte
cost (line 686).

Resolution order, per ``TransferClass`` (first hit wins):

1. ``target.measured.one_byte_s[class]``: measured on the target node;
2. ``source.measured.one_byte_s[class]``: measured on the source node
   (AHEAD's fallback);
3. estimated from the source trace, that class's ops only:
   a. the median GPU duration of its ops of <= 8 bytes when at least 3 exist
      (what AHEAD measures: a tiny copy's GPU time);
   b. else the intercept of a least-squares fit of GPU duration against bytes
      over its ops (LogGP eq. 1: ``T = (L+O) + n*G``), clipped at >= 0;
4. the same estimate over every transfer of the trace, whatever its class
   (class-agnostic);
5. ``fallback_s`` given by the caller (``nodecast curves --one-byte-us``);
6. nothing: L+O = 0, and the note says the projection underestimates small
   copies.

Trace ops with a GPU duration <= 0 (synthetic traces, clock glitches) are left
out of every estimate. Every choice is written to ``provenance`` with the value
in microseconds, so the report can show which number was used and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from nodecast.traces.kinds import TransferClass

if TYPE_CHECKING:
    from collections.abc import Iterable

    from nodecast.machines.schema import Machine
    from nodecast.traces.trace import Trace

#: Ops of at most this many bytes count as "1-byte" copies in a trace estimate.
SMALL_BYTES = 8
#: Fewest small ops for their median to be used.
MIN_SMALL_OPS = 3

#: Where a 1-byte cost came from, best first (the ``origin`` values).
ORIGINS = ("target", "source", "trace-small", "trace-fit", "trace-all-small", "trace-all-fit", "fallback", "none")


@dataclass(frozen=True)
class OneByteCost:
    """Per-class 1-byte cost (seconds), where each came from, and a sentence saying so.

    ``seconds``/``origin``/``provenance`` are keyed by ``TransferClass``;
    ``origin`` is one of ``ORIGINS``.
    """

    seconds: dict[TransferClass, float] = field(default_factory=dict)
    origin: dict[TransferClass, str] = field(default_factory=dict)
    provenance: dict[TransferClass, str] = field(default_factory=dict)

    def per_op(self, classes: np.ndarray) -> np.ndarray:
        """L+O of every op (seconds) from its TransferClass code; 0 for unresolved classes."""
        table = np.zeros(max(TransferClass) + 1, dtype=np.float64)
        for klass, value in self.seconds.items():
            table[klass] = value
        return table[np.asarray(classes, dtype=np.intp)]

    def notes(self) -> list[str]:
        """The provenance sentences, in class order."""
        return [self.provenance[k] for k in sorted(self.provenance)]


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.3f} µs"


def estimate_from_ops(bytes_: np.ndarray, duration_s: np.ndarray) -> tuple[float, str, str] | None:
    """L+O estimated from ops' sizes and GPU durations, or None when it cannot be.

    Returns ``(seconds, method, description)`` where method is ``"small"`` (the
    median of the ops of <= ``SMALL_BYTES`` bytes, at least ``MIN_SMALL_OPS`` of
    them) or ``"fit"`` (least-squares intercept, clipped at 0; needs two
    distinct sizes).
    """
    bytes_ = np.asarray(bytes_, dtype=np.float64)
    duration_s = np.asarray(duration_s, dtype=np.float64)
    ok = np.isfinite(duration_s) & (duration_s > 0) & (bytes_ >= 0)
    bytes_, duration_s = bytes_[ok], duration_s[ok]
    small = bytes_ <= SMALL_BYTES
    n_small = int(small.sum())
    if n_small >= MIN_SMALL_OPS:
        value = float(np.median(duration_s[small]))
        return value, "small", f"median GPU time of {n_small} ops of <= {SMALL_BYTES} B"
    if np.unique(bytes_).size >= 2:
        slope, intercept = np.polyfit(bytes_, duration_s, 1)
        del slope
        value = max(float(intercept), 0.0)
        clipped = " (clipped at 0)" if intercept < 0 else ""
        return value, "fit", (
            f"intercept of a least-squares fit of GPU time vs bytes over {bytes_.size} ops "
            f"(LogGP eq. 1){clipped}"
        )
    return None


def resolve_one_byte(
    trace: Trace | None,
    source: Machine | None,
    target: Machine,
    classes: Iterable[TransferClass | int] | None = None,
    *,
    fallback_s: float | None = None,
    fallback_label: str = "given default",
) -> OneByteCost:
    """The 1-byte cost of each class (those of ``classes``, else those in ``trace``).

    See the module docstring for the order. ``fallback_label`` names where
    ``fallback_s`` comes from in the provenance (``--one-byte-us``, say).
    """
    if fallback_s is not None and (not np.isfinite(fallback_s) or fallback_s < 0):
        msg = f"fallback 1-byte cost must be a number >= 0 seconds (got {fallback_s!r})"
        raise ValueError(msg)
    tc_all = trace.transfer_class if trace is not None else np.zeros(0, dtype=np.int8)
    if classes is None:
        present = np.unique(tc_all)
        wanted = [TransferClass(int(c)) for c in present if c != TransferClass.NOT_A_TRANSFER]
    else:
        wanted = [TransferClass(int(c)) for c in classes]
    wanted = sorted(set(wanted))

    if trace is not None and len(trace):
        bytes_all = trace["bytes"].astype(np.float64)
        dur_all = trace.duration_ns.astype(np.float64) * 1e-9
    else:
        bytes_all = dur_all = np.zeros(0)
    is_transfer = tc_all != TransferClass.NOT_A_TRANSFER
    agnostic: tuple[float, str, str] | None | bool = False  # False: not computed yet

    seconds: dict[TransferClass, float] = {}
    origin: dict[TransferClass, str] = {}
    prov: dict[TransferClass, str] = {}
    t_meas = target.measured.one_byte_s if target.measured is not None else {}
    s_meas = source.measured.one_byte_s if source is not None and source.measured is not None else {}
    for klass in wanted:
        key = klass.key
        head = f"1-byte cost (L+O) of {key}"
        if key in t_meas:
            value = float(t_meas[key])
            seconds[klass], origin[klass] = value, "target"
            prov[klass] = f"{head} from target machine file {target.name} (measured): {_us(value)}"
            continue
        if key in s_meas:
            value = float(s_meas[key])
            seconds[klass], origin[klass] = value, "source"
            prov[klass] = (
                f"{head} from source machine file {source.name} (measured; AHEAD's fallback when the "  # type: ignore[union-attr]
                f"target cannot be measured): {_us(value)}"
            )
            continue
        mine = tc_all == klass
        est = estimate_from_ops(bytes_all[mine], dur_all[mine]) if mine.any() else None
        if est is not None:
            value, method, how = est
            seconds[klass], origin[klass] = value, f"trace-{method}"
            prov[klass] = f"{head} estimated from the source trace, {how}: {_us(value)}"
            continue
        if agnostic is False:
            agnostic = estimate_from_ops(bytes_all[is_transfer], dur_all[is_transfer]) if is_transfer.any() else None
        if agnostic is not None:
            value, method, how = agnostic  # type: ignore[misc]
            seconds[klass], origin[klass] = value, f"trace-all-{method}"
            prov[klass] = (
                f"{head}: no usable {key} ops in the source trace; class-agnostic estimate from all "
                f"transfers, {how}: {_us(value)}"
            )
            continue
        if fallback_s is not None:
            seconds[klass], origin[klass] = float(fallback_s), "fallback"
            prov[klass] = (
                f"{head}: not measured on target or source and no trace estimate; {fallback_label}: "
                f"{_us(fallback_s)}"
            )
            continue
        seconds[klass], origin[klass] = 0.0, "none"
        prov[klass] = (
            f"{head}: not measured on target or source and no trace estimate; L+O = 0 "
            "(small copies will be projected too fast)"
        )
    return OneByteCost(seconds=seconds, origin=origin, provenance=prov)
