"""The 1-byte cost L+O of AHEAD's eqs. 9-10, per transfer class, with its provenance.

AHEAD measures latency plus overhead together as the GPU time of a 1-byte
transfer (paper line 336, eq. 1 at line 171) and, when the target node is not
available, uses the one measured on the source node: "the changes in the fixed
overhead between different machines varies slightly compared to changes in the
link bandwidth" (lines 708-715). Device-to-device copies get their own 1-byte
cost (line 686).

Resolution order, per ``TransferClass`` (first hit wins):

1. ``given_s`` from the caller (``--one-byte-us KIND=µs``; the key is a class
   key such as ``htod_pinned``, or ``all``; a class key beats ``all``);
2. ``target.measured.one_byte_s[class]``: measured on the target node;
3. ``source.measured.one_byte_s[class]``: measured on the source node
   (AHEAD's fallback);
4. estimated from the source trace, that class's copies only:
   a. *tiny copies*: the median GPU time of its copies of <= 8 B when at
      least 3 exist. This is AHEAD's own measurement (the GPU time of a tiny
      copy); 8 B cross any link of the catalogue in under 1 ns, far below
      any L+O;
   b. *latency-bound copies*: the median of ``T_i - n_i / BW`` over the
      copies small enough for latency to dominate them. By LogGP eq. 1,
      ``T = (L+O) + n/BW``, latency dominates a copy when ``n/BW <= L+O``,
      i.e. when ``n`` is below the link's bandwidth-latency product
      ``BW x (L+O)``. A copy counts when both hold:

      - ``n_i <= BW x L_ref``, the product taken with ``L_ref =
        REFERENCE_LATENCY_S = 0.96 µs``, AHEAD's measured 1-byte cost (Titan;
        the shipped traces' copies of <= 8 B take 0.66-3.0 µs, median per
        trace and kind, on six GPU models from K20X to A100). This
        is what keeps a copy that is slow for another reason (a 512 MB
        pageable copy at a third of the link rate, staged by the CPU) from
        passing for latency: the copy's time alone cannot tell the two apart;
      - ``n_i / BW <= T_i / 2``: its own measured time says at least half of
        it is not wire time.

      For such a copy an error of x % in BW moves the estimate by at most
      x % of L+O. ``BW`` is the raw rate of the GPU's host link
      (``topology.raw_rate_bps``) for host copies, half the GPU's
      data-sheet DRAM bandwidth for device-to-device copies (a copy reads
      and writes, as ``ahead`` counts it) and the slowest link between the
      two GPUs for peer copies. Copies far above the product never enter the
      estimate: a line fitted through gigabyte copies puts its intercept
      anywhere (issue 12 reports 91.8 µs from a trace of mostly gigabyte
      copies; on five shipped traces it is negative, which was clipped to 0);
5. the same estimates over every copy of the trace, whatever its class
   (class-agnostic);
6. ``fallback_s`` given by the caller (``nodecast curves --one-byte-us``);
7. ``DEFAULT_ONE_BYTE_S``: AHEAD's own measured 1-byte cost (0.96 µs, see
   below). L+O is never taken as 0: every copy pays it.

Steps 4-7 never exceed the class's *smallest copy's own measured time* (the
median GPU time of its copies of the smallest size, every copy of <= 8 B
counting as one size, as AHEAD's 1-byte copies): by eq. 1 a copy cannot take
less than L+O. Given and measured values (1-3) are used as they are.

Trace ops with a GPU duration <= 0 (synthetic traces, clock glitches) are left
out of every estimate. Every choice is written to ``provenance`` with the value
in microseconds, so the report can show which number was used and why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from nodecast.errors import InputError
from nodecast.machines.topology import bottleneck, raw_rate_bps
from nodecast.traces.kinds import TransferClass

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from nodecast.machines.schema import Machine
    from nodecast.traces.trace import Trace

TC = TransferClass

#: Copies of at most this many bytes count as "1-byte" copies in a trace estimate.
SMALL_BYTES = 8
#: Fewest tiny copies for their median to be used.
MIN_SMALL_OPS = 3
#: A copy is latency-bound when its wire time n/BW is at most this share of its GPU time (n/BW <= L+O).
LATENCY_BOUND_SHARE = 0.5
#: Latency of the bandwidth-latency product that bounds latency-bound copies, s: AHEAD's measured 1-byte cost.
REFERENCE_LATENCY_S = 0.96e-6
#: DRAM bytes per copied byte of a device-to-device copy (read + write), as ``ahead`` counts them.
DTOD_DRAM_PASSES = 2

#: AHEAD's procedure on AHEAD's data: the median GPU time of the 100 1-byte pinned host->device copies in
#: the Titan bandwidthTest trace shipped as sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x.
DEFAULT_ONE_BYTE_S = 0.96e-6
DEFAULT_ONE_BYTE_SOURCE = (
    "AHEAD's measured 1-byte cost (median 1-byte pinned HtoD GPU time in the Titan bandwidthTest "
    "trace, sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x)"
)
#: Largest 1-byte cost a caller may give, seconds: 1 s for one byte is a million times any measured copy.
MAX_GIVEN_S = 1.0
#: Key of a given value that applies to every class.
ALL = "all"

#: Where a 1-byte cost came from, best first (the ``origin`` values).
ORIGINS = ("given", "target", "source", "trace-small", "trace-latency", "trace-all-small", "trace-all-latency",
           "fallback", "default")

_HOST = (TC.HTOD_PAGEABLE, TC.HTOD_PINNED, TC.DTOH_PAGEABLE, TC.DTOH_PINNED, TC.HTOD_MANAGED, TC.DTOH_MANAGED)
_GPU_PAIR = (TC.PEER, TC.DTOD_MANAGED)


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
        """L+O of every op (seconds) from its TransferClass code; 0 for classes not resolved (not copies)."""
        table = np.zeros(max(TransferClass) + 1, dtype=np.float64)
        for klass, value in self.seconds.items():
            table[klass] = value
        return table[np.asarray(classes, dtype=np.intp)]

    def notes(self) -> list[str]:
        """The provenance sentences, in class order."""
        return [self.provenance[k] for k in sorted(self.provenance)]


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.3f} µs"


def check_given(given_s: Mapping[str, float] | None, *, option: str = "--one-byte-us") -> dict[str, float]:
    """Validated 1-byte costs given by the user: ``{class key or "all": seconds}``.

    Keys are ``TransferClass`` keys (``htod_pinned``...) or ``all``; values
    are seconds, above 0 and at most ``MAX_GIVEN_S``. Anything else is an
    InputError naming ``option``.
    """
    if not given_s:
        return {}
    known = [c.key for c in TC if c not in (TC.NOT_A_TRANSFER, TC.HTOH, TC.OTHER)] + [ALL]
    out: dict[str, float] = {}
    for key, value in given_s.items():
        name = str(key).strip().lower()
        if name not in known:
            raise InputError(f"unknown transfer kind {key!r}", key=option, hint=f"Known: {', '.join(known)}")
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            raise InputError(f"{key}: not a number ({value!r})", key=option) from None
        if not (math.isfinite(seconds) and 0 < seconds <= MAX_GIVEN_S):
            raise InputError(
                f"{key}: must be above 0 and at most {MAX_GIVEN_S * 1e6:g} µs (1 s) (got {seconds * 1e6:g} µs)",
                key=option,
                hint="Give the GPU time of a 1-byte copy, typically 1 to 20 µs",
            )
        out[name] = seconds
    return out


def source_rates_bps(trace: Trace, source: Machine) -> np.ndarray:
    """Per op: the data-sheet rate (bytes/s) of what the copy crossed on ``source``; NaN for other ops.

    Host copies: the raw rate of the GPU's host link (device ``d`` of the
    trace is GPU ``d mod count``); device-to-device: DRAM bandwidth /
    ``DTOD_DRAM_PASSES``; peer: the slowest link between the two GPUs (NaN
    when the source file has no route between them).
    """
    tc = trace.transfer_class
    rate = np.full(len(trace), np.nan)
    count = source.gpu.count
    dev = np.maximum(trace["device"], 0).astype(np.int64) % count
    host = np.isin(tc, [int(c) for c in _HOST])
    for g in np.unique(dev[host]):
        sel = host & (dev == g)
        try:
            rate[sel] = raw_rate_bps(source.host_link(int(g)))
        except InputError:
            continue  # no host route in the file: these copies give no estimate
    dram = source.gpu.levels.get("dram")
    local_bw = dram.bandwidth_bps / DTOD_DRAM_PASSES if dram is not None and dram.bandwidth_bps else np.nan
    rate[tc == TC.DTOD] = local_bw
    rows = np.flatnonzero(np.isin(tc, [int(c) for c in _GPU_PAIR]))
    if rows.size:
        src = np.maximum(trace["src_device"][rows], 0).astype(np.int64) % count
        dst = np.maximum(trace["dst_device"][rows], 0).astype(np.int64) % count
        pair = src * count + dst
        for code in np.unique(pair):
            s, d = divmod(int(code), count)
            sel = rows[pair == code]
            if s == d:
                rate[sel] = local_bw
                continue
            try:
                rate[sel] = raw_rate_bps(bottleneck(source.route(f"gpu{s}", f"gpu{d}")))
            except InputError:
                continue
    return rate


def estimate_from_ops(
    bytes_: np.ndarray, duration_s: np.ndarray, rate_bps: np.ndarray | None = None
) -> tuple[float, str, str] | None:
    """L+O estimated from copies' sizes (bytes), GPU durations (s) and source rates (bytes/s), or None.

    Returns ``(seconds, method, description)`` where method is ``"small"``
    (median time of the copies of <= ``SMALL_BYTES`` bytes, at least
    ``MIN_SMALL_OPS`` of them) or ``"latency"`` (median of ``T - n/BW`` over
    the latency-bound copies, ``n <= BW x REFERENCE_LATENCY_S`` and
    ``n/BW <= T/2``; needs ``rate_bps``). See the module docstring, step 4.
    The result is always above 0.
    """
    bytes_ = np.asarray(bytes_, dtype=np.float64)
    duration_s = np.asarray(duration_s, dtype=np.float64)
    ok = np.isfinite(duration_s) & (duration_s > 0) & (bytes_ >= 0)
    b, d = bytes_[ok], duration_s[ok]
    small = b <= SMALL_BYTES
    n_small = int(small.sum())
    if n_small >= MIN_SMALL_OPS:
        value = float(np.median(d[small]))
        how = f"median GPU time of {n_small:,} copies of <= {SMALL_BYTES} B (AHEAD's 1-byte measurement)"
        return value, "small", how
    if rate_bps is None:
        return None
    rate = np.asarray(rate_bps, dtype=np.float64)[ok]
    with np.errstate(divide="ignore", invalid="ignore"):
        wire = b / rate
    # NaN (no rate) compares False in both.
    bound = (b <= rate * REFERENCE_LATENCY_S) & (wire <= LATENCY_BOUND_SHARE * d)
    k = int(bound.sum())
    if not k:
        return None
    value = float(np.median(d[bound] - wire[bound]))
    sizes = b[bound]
    span = f"{int(sizes.min()):,} B" if sizes.min() == sizes.max() else f"{int(sizes.min()):,}-{int(sizes.max()):,} B"
    return value, "latency", (
        f"median of GPU time - n/BW over {k:,} latency-bound {'copy' if k == 1 else 'copies'} ({span}; "
        f"n at most BW x {REFERENCE_LATENCY_S * 1e6:g} µs and n/BW at most half the GPU time; LogGP eq. 1)"
    )


def smallest_copy_time(bytes_: np.ndarray, duration_s: np.ndarray) -> tuple[float, int] | None:
    """(median GPU time in s, largest size in bytes) of the smallest copies with a time > 0, or None.

    The smallest copies are those of the smallest size, or all those of at
    most ``SMALL_BYTES`` when the smallest size is that small (AHEAD's 1-byte
    copies).
    """
    bytes_ = np.asarray(bytes_)
    duration_s = np.asarray(duration_s, dtype=np.float64)
    ok = np.isfinite(duration_s) & (duration_s > 0)
    if not ok.any():
        return None
    b, d = bytes_[ok], duration_s[ok]
    smallest = b <= max(b.min(), SMALL_BYTES)
    return float(np.median(d[smallest])), int(b[smallest].max())


def resolve_one_byte(
    trace: Trace | None,
    source: Machine | None,
    target: Machine,
    classes: Iterable[TransferClass | int] | None = None,
    *,
    given_s: Mapping[str, float] | None = None,
    given_label: str = "--one-byte-us",
    fallback_s: float | None = None,
    fallback_label: str = "given default",
) -> OneByteCost:
    """The 1-byte cost of each class (those of ``classes``, else those in ``trace``).

    See the module docstring for the order. ``given_s`` maps class keys (or
    ``"all"``) to seconds (``check_given``); ``given_label`` and
    ``fallback_label`` name where those values come from in the provenance.
    """
    if fallback_s is not None and (not np.isfinite(fallback_s) or fallback_s <= 0):
        msg = f"fallback 1-byte cost must be a number > 0 seconds (got {fallback_s!r})"
        raise ValueError(msg)
    given = check_given(given_s)
    tc_all = trace.transfer_class if trace is not None else np.zeros(0, dtype=np.int8)
    if classes is None:
        present = _codes_present(tc_all)
        wanted = [TransferClass(int(c)) for c in present if c != TransferClass.NOT_A_TRANSFER]
    else:
        wanted = [TransferClass(int(c)) for c in classes]
    wanted = sorted(set(wanted))

    copies = _Copies(trace) if trace is not None and len(trace) else None
    rates: list[np.ndarray] = []  # the source's rates per op, computed once, only if an estimate needs them

    def estimate(mask: np.ndarray) -> tuple[float, str, str] | None:
        est = copies.tiny_estimate(mask)  # type: ignore[union-attr]  # tiny copies first: they need no rate
        if est is not None or source is None:
            return est
        if not rates:
            rates.append(source_rates_bps(trace, source))  # type: ignore[arg-type]
        return estimate_from_ops(copies.bytes_[mask], copies.seconds_all()[mask], rates[0][mask])  # type: ignore[union-attr]
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
        if key in given or ALL in given:
            which = key if key in given else ALL
            seconds[klass], origin[klass] = given[which], "given"
            prov[klass] = f"{head}: {_us(given[which])}, given ({given_label} {which}={given[which] * 1e6:g})"
            continue
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
        cap = copies.smallest_copy_time(mine) if mine.any() else None  # type: ignore[union-attr]
        est = estimate(mine) if mine.any() else None
        if est is not None:
            value, method, how = est
            origin[klass] = f"trace-{method}"
            seconds[klass], capped = _capped(value, cap)
            prov[klass] = f"{head} estimated from the source trace, {how}: {_us(seconds[klass])}{capped}"
            continue
        if agnostic is False:
            agnostic = estimate(is_transfer) if is_transfer.any() else None
        if agnostic is not None:
            value, method, how = agnostic  # type: ignore[misc]
            origin[klass] = f"trace-all-{method}"
            seconds[klass], capped = _capped(value, cap)
            prov[klass] = (
                f"{head}: no tiny or latency-bound {key} copy in the source trace; class-agnostic estimate from "
                f"all copies, {how}: {_us(seconds[klass])}{capped}"
            )
            continue
        why = "not measured on target or source, and no copy of the source trace is tiny or latency-bound"
        if fallback_s is not None:
            origin[klass] = "fallback"
            seconds[klass], capped = _capped(float(fallback_s), cap)
            prov[klass] = f"{head}: {why}; {fallback_label}: {_us(seconds[klass])}{capped}"
            continue
        origin[klass] = "default"
        seconds[klass], capped = _capped(DEFAULT_ONE_BYTE_S, cap)
        prov[klass] = (
            f"{head}: {why}; assumed {_us(seconds[klass])}{capped}, {DEFAULT_ONE_BYTE_SOURCE} "
            f"(set it with {given_label} {key}=µs)"
        )
    return OneByteCost(seconds=seconds, origin=origin, provenance=prov)


def bytes_float64(trace: Trace) -> np.ndarray:
    """The trace's ``bytes`` column as float64 (bytes), once per trace (``Trace.memo``; read-only)."""

    def compute() -> np.ndarray:
        n = trace["bytes"].astype(np.float64)
        n.flags.writeable = False
        return n

    return trace.memo("bytes-float64", compute)


class _Copies:
    """A trace's copy sizes (bytes) and GPU times (s) as the estimates of step 4 read them.

    ``smallest_copy_time(mask)`` and ``tiny_estimate(mask)`` give what ``smallest_copy_time`` and
    ``estimate_from_ops`` (without rates) give for the ops of ``mask``, from whole-trace masks and the
    times of the few copies they use: no gather of the masked ops' sizes and times.
    """

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        # NOTE: the int64 column compares to a float exactly as its float64 conversion does (numpy converts).
        self.sizes = trace["bytes"]
        # A time > 0 s is a duration > 0 ns (isfinite always holds for a time from integer ns).
        self.timed = trace.duration_ns > 0
        self._seconds: np.ndarray | None = None
        self._last: tuple[np.ndarray, tuple[float | None, np.ndarray, np.ndarray]] | None = None

    def seconds(self, rows: np.ndarray) -> np.ndarray:
        """GPU time of the ops ``rows``, s."""
        return (self.trace["end_ns"][rows] - self.trace["start_ns"][rows]).astype(np.float64) * 1e-9

    @property
    def bytes_(self) -> np.ndarray:
        """Size of every op as float64, bytes (for the latency-bound estimate only)."""
        return bytes_float64(self.trace)

    def seconds_all(self) -> np.ndarray:
        """GPU time of every op, s (formed once, for the latency-bound estimate only)."""
        if self._seconds is None:
            self._seconds = self.trace.duration_ns.astype(np.float64) * 1e-9
        return self._seconds

    def _timed_small(self, mask: np.ndarray) -> tuple[float | None, np.ndarray, np.ndarray]:
        """(smallest size with a time or None, rows of the copies of <= SMALL_BYTES with a time, their times in s)
        among the ops of ``mask``; the last mask's answer is kept (the cap and the estimate read the same)."""
        if self._last is not None and self._last[0] is mask:
            return self._last[1]
        ok = mask & self.timed
        b = self.sizes
        smallest = float(np.min(b, where=ok, initial=np.iinfo(b.dtype).max)) if ok.any() else None
        rows = np.flatnonzero(ok & (b <= SMALL_BYTES)) if smallest is not None and smallest <= SMALL_BYTES else \
            np.zeros(0, dtype=np.intp)
        answer = (smallest, rows, self.seconds(rows))
        self._last = (mask, answer)
        return answer

    def smallest_copy_time(self, mask: np.ndarray) -> tuple[float, int] | None:
        """``smallest_copy_time`` of the ops of ``mask``."""
        smallest, rows, seconds = self._timed_small(mask)
        if smallest is None:
            return None
        if smallest > SMALL_BYTES:  # no copy of <= SMALL_BYTES: those of the smallest size
            rows = np.flatnonzero(mask & self.timed & (self.sizes <= smallest))
            seconds = self.seconds(rows)
        return float(np.median(seconds)), int(float(self.sizes[rows].max()))

    def tiny_estimate(self, mask: np.ndarray) -> tuple[float, str, str] | None:
        """``estimate_from_ops`` of the ops of ``mask`` without rates: their copies of <= ``SMALL_BYTES``."""
        smallest, rows, seconds = self._timed_small(mask)
        if smallest is not None and smallest < 0:  # sizes below 0 are not copies an estimate reads
            keep = self.sizes[rows] >= 0
            rows, seconds = rows[keep], seconds[keep]
        if len(rows) < MIN_SMALL_OPS:
            return None
        value = float(np.median(seconds))
        return value, "small", f"median GPU time of {len(rows):,} copies of <= {SMALL_BYTES} B (AHEAD's 1-byte measurement)"


def _codes_present(codes: np.ndarray) -> np.ndarray:
    """The distinct values of a small-integer code column (``np.unique`` without its sort of every op)."""
    if not codes.size:
        return codes
    low = int(codes.min())
    return np.flatnonzero(np.bincount((codes.astype(np.int64) - low))) + low


def _capped(value: float, cap: tuple[float, int] | None) -> tuple[float, str]:
    """``value`` limited to the smallest copy's measured time, and the words saying so when it was."""
    if cap is None or value <= cap[0]:
        return value, ""
    return cap[0], (f" (capped at the smallest copy's measured GPU time, {cap[1]:,} B in {_us(cap[0])}, "
                    f"from {_us(value)})")
