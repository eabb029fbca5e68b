"""Effective bandwidth against transfer size, per model, copy class and machine.

This evaluates the transfer models the way AHEAD's Figs. 9-10 show them:
for each size (powers of two, 1 B to 1 GiB by default) and class, the
projected time ``T(n)`` of one copy and the bandwidth ``n / T(n)`` it implies.
The models take a Trace, so the sizes are handed to them as a synthetic trace
of one copy per (class, size) built with ``Trace.from_columns``: a way to
evaluate the model, not data. Its GPU durations are zero, so no 1-byte cost
can be estimated from it; L+O comes from the target's machine file, else the
source's (``source``, by default the first machine), else the fallback
``one_byte_fallback_s``.

The default fallback, ``DEFAULT_ONE_BYTE_S = 0.96 µs``, is AHEAD's own
procedure applied to AHEAD's own data: the median GPU time of the 100 1-byte
pinned host->device copies in the Titan bandwidthTest trace shipped as
``sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x`` (min 0.928 µs,
mean 1.258 µs). The same trace's pageable 1-byte copies have a median of
0.928 µs, and Summit's are 1.792 µs (pinned) and 1.248 µs (pageable), so
the fallback is good to about a factor of two for small copies and
irrelevant above a few hundred KiB.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from nodecast.errors import InputError
from nodecast.models.registry import get_models, model_names
from nodecast.models.one_byte import OneByteCost, resolve_one_byte
from nodecast.models.transfer_base import HANDLED, TransferModelBase
from nodecast.traces.kinds import CopyKind, MemKind, OpKind, TransferClass
from nodecast.traces.trace import Trace, TraceMeta

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nodecast.machines.schema import Machine

TC = TransferClass

#: See the module docstring.
DEFAULT_ONE_BYTE_S = 0.96e-6
DEFAULT_ONE_BYTE_SOURCE = (
    "median 1-byte pinned HtoD GPU time in AHEAD's Titan bandwidthTest trace "
    "(sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x)"
)
#: Classes drawn when none are asked for: AHEAD Figs. 9-10 (pinned and pageable, both directions) and D2D.
DEFAULT_CLASSES = (TC.HTOD_PINNED, TC.DTOH_PINNED, TC.DTOD, TC.HTOD_PAGEABLE, TC.DTOH_PAGEABLE)
#: Sizes of the terminal table (bytes): 1 KiB, 64 KiB, 1 MiB, 64 MiB, 1 GiB.
TABLE_SIZES = (2**10, 2**16, 2**20, 2**26, 2**30)
#: Default sweep: powers of two from 1 B to 1 GiB.
DEFAULT_SIZES = "1:1Gi"

#: (copy kind, source memory, destination memory) of a synthetic copy of each class.
_SYNTHETIC = {
    TC.HTOD_PAGEABLE: (CopyKind.HTOD, MemKind.PAGEABLE, MemKind.DEVICE),
    TC.HTOD_PINNED: (CopyKind.HTOD, MemKind.PINNED, MemKind.DEVICE),
    TC.DTOH_PAGEABLE: (CopyKind.DTOH, MemKind.DEVICE, MemKind.PAGEABLE),
    TC.DTOH_PINNED: (CopyKind.DTOH, MemKind.DEVICE, MemKind.PINNED),
    TC.DTOD: (CopyKind.DTOD, MemKind.DEVICE, MemKind.DEVICE),
    TC.PEER: (CopyKind.PEER, MemKind.DEVICE, MemKind.DEVICE),
    TC.HTOD_MANAGED: (CopyKind.UVM_HTOD, MemKind.MANAGED, MemKind.MANAGED),
    TC.DTOH_MANAGED: (CopyKind.UVM_DTOH, MemKind.MANAGED, MemKind.MANAGED),
    TC.DTOD_MANAGED: (CopyKind.UVM_DTOD, MemKind.MANAGED, MemKind.MANAGED),
}
_GPU_PAIR = (TC.PEER, TC.DTOD_MANAGED)

_UNITS = {"": 1, "b": 1, "ki": 2**10, "kib": 2**10, "mi": 2**20, "mib": 2**20, "gi": 2**30, "gib": 2**30,
          "ti": 2**40, "tib": 2**40}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")
#: Largest copy size evaluated: 1 PiB (2^50 B), far beyond any GPU's memory.
MAX_SIZE = 2**50


def parse_size(text: str, *, key: str = "--sizes") -> int:
    """Bytes from ``"4096"``, ``"64Ki"``, ``"1MiB"``, ``"1Gi"`` (binary units only)."""
    m = _SIZE_RE.match(text)
    if not m:
        raise InputError(f"cannot read size {text!r}", key=key, hint="Write sizes as 4096, 64Ki, 1Mi or 1GiB")
    digits, unit = m.group(1).lstrip("0") or "0", m.group(2).lower()
    value = int(digits) if len(digits) <= 20 else MAX_SIZE + 1  # more digits are above any bound (and int())
    if unit not in _UNITS:
        raise InputError(
            f"unknown size unit {m.group(2)!r} in {text!r}", key=key,
            hint="Use binary units Ki, Mi, Gi, Ti (KiB... also accepted); K/M/G are ambiguous",
        )
    size = value * _UNITS[unit]
    if size < 1:
        raise InputError(f"size must be at least 1 byte (got {text!r})", key=key)
    if size > MAX_SIZE:
        raise InputError(f"size {text!r} is above 1 PiB (2^50 B)", key=key,
                         hint="Sizes must lie between 1 B and 1024Ti; check the unit")
    return size


def parse_sizes(text: str, *, key: str = "--sizes") -> np.ndarray:
    """Sizes in bytes: ``"LO:HI"`` (every power of two from LO to HI) or a comma list."""
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 2:
            raise InputError(f"cannot read size range {text!r}", key=key, hint="Write LO:HI, e.g. 1:1Gi")
        lo, hi = (parse_size(p, key=key) for p in parts)
        if hi < lo:
            raise InputError(f"range {text!r} ends before it starts", key=key)
        first, last = int(np.ceil(np.log2(lo))), int(np.floor(np.log2(hi)))
        if last < first:
            raise InputError(f"no power of two lies in {text!r}", key=key, hint="Widen the range")
        return 2 ** np.arange(first, last + 1, dtype=np.int64)
    sizes = sorted({parse_size(p, key=key) for p in text.split(",") if p.strip()})
    if not sizes:
        raise InputError("no sizes given", key=key, hint="Write LO:HI, e.g. 1:1Gi, or a list 1Ki,1Mi")
    return np.array(sizes, dtype=np.int64)


def parse_classes(text: str, *, key: str = "--classes") -> list[TransferClass]:
    """Transfer classes from a comma list of keys (``htod_pinned,dtod``)."""
    known = {c.key: c for c in HANDLED}
    out: list[TransferClass] = []
    for part in (p.strip().lower() for p in text.split(",")):
        if not part:
            continue
        if part not in known:
            raise InputError(f"unknown transfer class {part!r}", key=key, hint=f"Known: {', '.join(known)}")
        if known[part] not in out:
            out.append(known[part])
    if not out:
        raise InputError("no transfer class given", key=key, hint=f"Known: {', '.join(known)}")
    return out


def synthetic_trace(classes: Sequence[TransferClass], sizes: np.ndarray) -> Trace:
    """One copy per (class, size), class-major, on GPU 0 (GPU-pair classes: 0 -> 1), zero durations."""
    sizes = np.asarray(sizes, dtype=np.int64)
    k, s = len(classes), sizes.size
    copy_kind = np.repeat([_SYNTHETIC[c][0] for c in classes], s)
    src_mem = np.repeat([_SYNTHETIC[c][1] for c in classes], s)
    dst_mem = np.repeat([_SYNTHETIC[c][2] for c in classes], s)
    pair = np.repeat([c in _GPU_PAIR for c in classes], s)
    return Trace.from_columns(
        {
            "kind": np.full(k * s, OpKind.MEMCPY),
            "copy_kind": copy_kind,
            "src_mem": src_mem,
            "dst_mem": dst_mem,
            "bytes": np.tile(sizes, k),
            "start_ns": np.zeros(k * s, dtype=np.int64),
            "end_ns": np.zeros(k * s, dtype=np.int64),
            "device": np.zeros(k * s, dtype=np.int16),
            "src_device": np.zeros(k * s, dtype=np.int16),
            "dst_device": np.where(pair, 1, 0).astype(np.int16),
        },
        meta=TraceMeta(source="synthetic: one copy per class and size", format="synthetic"),
        sort=False,
    )


@dataclass
class Curves:
    """Projected effective bandwidth per machine, model, class and size.

    ``table`` columns: machine, model, transfer_class, bytes, time_s,
    bandwidth_bps (= bytes / time_s; NaN where the class cannot run on a
    machine). ``measured`` holds the machine files' measured curves (machine,
    transfer_class, bytes, bandwidth_bps, origin). ``one_byte`` is the L+O
    used per machine; ``notes`` the model notes per ``"machine/model"``.
    """

    table: pd.DataFrame
    measured: pd.DataFrame
    one_byte: dict[str, OneByteCost]
    notes: dict[str, list[str]]
    source: str
    machines: list[str]
    models: list[str]
    classes: list[TransferClass]
    sizes: np.ndarray
    one_byte_fallback_s: float | None
    one_byte_fallback_label: str
    skipped: list[str] = field(default_factory=list)

    def at_sizes(self, sizes: Sequence[int]) -> pd.DataFrame:
        """Bandwidth (bytes/s) at ``sizes``: one row per (machine, class, model), one column per size."""
        t = self.table[self.table["bytes"].isin(list(sizes))]
        wide = t.pivot_table(index=["machine", "transfer_class", "model"], columns="bytes",
                             values="bandwidth_bps", sort=False, dropna=False)
        return wide

    def one_byte_summary(self) -> list[str]:
        """Where each machine's L+O came from, one line per distinct answer (machines grouped)."""
        from nodecast.units import significant

        described: dict[str, list[str]] = {}
        for machine in self.machines:
            cost = self.one_byte[machine]
            origins = {cost.origin[c] for c in cost.origin}
            values = sorted({round(v * 1e6, 3) for v in cost.seconds.values()})
            vals = "/".join(significant(v, 4) for v in values) + " µs"  # 1,000,000 µs, never 1e+06
            if not origins:
                text = "no class drawn"
            elif origins == {"target"}:
                text = f"measured in its machine file ({vals})"
            elif origins == {"source"}:
                text = f"measured on source {self.source} ({vals})"
            elif origins == {"fallback"}:
                text = f"assumed {vals} ({self.one_byte_fallback_label})"
            elif origins == {"none"}:
                text = "none (L+O = 0)"
            else:
                text = ", ".join(f"{c.key} {cost.origin[c]} {significant(cost.seconds[c] * 1e6, 4)} µs"
                                 for c in sorted(cost.origin))
            described.setdefault(text, []).append(machine)
        return [f"{', '.join(ms)}: {text}" for text, ms in described.items()]


def _instantiate(name: str, fallback_s: float | None, fallback_label: str):  # noqa: ANN202
    model = get_models([name])[0]
    if isinstance(model, TransferModelBase):
        model = type(model)(one_byte_fallback_s=fallback_s, one_byte_fallback_label=fallback_label)
    return model


def bandwidth_curves(
    machines: Sequence[Machine],
    *,
    source: Machine | None = None,
    classes: Sequence[TransferClass] | None = None,
    sizes: np.ndarray | None = None,
    models: Sequence[str] | None = None,
    one_byte_fallback_s: float | None = DEFAULT_ONE_BYTE_S,
    one_byte_fallback_label: str = f"--one-byte-us default: {DEFAULT_ONE_BYTE_SOURCE}",
) -> Curves:
    """Evaluate ``models`` (default: every absolute transfer model) on each machine; see ``Curves``.

    The source-scaled models (``nodecast.models.scaled``) scale measured times
    and a synthetic trace has none: they are left out of the default.
    """
    if not machines:
        raise InputError("no machine given", key="--machines")
    source = source or machines[0]
    classes = list(classes or DEFAULT_CLASSES)
    sizes = parse_sizes(DEFAULT_SIZES) if sizes is None else np.asarray(sizes, dtype=np.int64)
    models = list(models or [m.name for m in get_models(model_names("transfer")) if not getattr(m, "source_scaled", False)])
    trace = synthetic_trace(classes, sizes)
    tc = trace.transfer_class
    frames, notes, one_byte, skipped = [], {}, {}, []
    for machine in machines:
        runnable = np.ones(len(trace), dtype=bool)
        for c in classes:
            if c in _GPU_PAIR and machine.gpu.count < 2:
                runnable &= tc != c
                skipped.append(f"{c.key} on {machine.name}: it has one GPU")
        one_byte[machine.name] = resolve_one_byte(
            None, source, machine, [c for c in classes if runnable[tc == c].any()],
            fallback_s=one_byte_fallback_s, fallback_label=one_byte_fallback_label,
        )
        sub = trace if runnable.all() else trace.take(runnable)
        for name in models:
            model = _instantiate(name, one_byte_fallback_s, one_byte_fallback_label)
            time_s = np.full(len(trace), np.nan)
            result = model.project(sub, source, machine) if len(sub) else None
            if result is not None:
                time_s[runnable] = result.time_s
            with np.errstate(divide="ignore", invalid="ignore"):
                bw = trace["bytes"] / time_s
            frames.append(pd.DataFrame({
                "machine": machine.name,
                "model": name,
                "transfer_class": [TransferClass(int(c)).key for c in tc],
                "bytes": trace["bytes"],
                "time_s": time_s,
                "bandwidth_bps": bw,
            }))
            notes[f"{machine.name}/{name}"] = result.notes if result is not None else []
    measured_rows = []
    for machine in machines:
        meas = machine.measured
        if meas is None:
            continue
        for c in classes:
            curve = meas.curves.get(c.key)
            if curve is None:
                continue
            for size, bw in zip(curve.sizes_bytes, curve.bandwidth_bps, strict=True):
                measured_rows.append((machine.name, c.key, size, bw, meas.origin))
    measured = pd.DataFrame(measured_rows, columns=["machine", "transfer_class", "bytes", "bandwidth_bps", "origin"])
    return Curves(
        table=pd.concat(frames, ignore_index=True),
        measured=measured,
        one_byte=one_byte,
        notes=notes,
        source=source.name,
        machines=[m.name for m in machines],
        models=models,
        classes=classes,
        sizes=sizes,
        one_byte_fallback_s=one_byte_fallback_s,
        one_byte_fallback_label=one_byte_fallback_label,
        skipped=skipped,
    )
