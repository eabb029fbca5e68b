"""Read Nsight Compute CSV exports into a per-launch metrics table in SI units.

Two layouts exist (../shared/reference/FORMATS.md C.2):

* **wide** (``ncu --csv --page raw``): a header row (launch identity columns,
  then one column per metric such as ``dram__bytes.sum``), a units row whose
  identity cells are empty, then one row per kernel launch;
* **long** (``ncu --csv`` default / ``--page details`` with ``--metrics``):
  one row per (launch, metric) with ``Metric Name``, ``Metric Unit`` and
  ``Metric Value`` columns (2020 versions add ``Kernel Time``; 2024+ add rule
  columns).

The profiled program's own output and ``==PROF==`` lines come before the
header; values may carry thousands separators (``"1,234.5"``) and units may be
auto-scaled (``usecond``, ``Mbyte``) unless ``--print-units base`` was given.
A profile may be split over several files, one metric each (the NERSC way of
collecting hierarchical-roofline data); launches are then joined by kernel
name and occurrence (the k-th launch of a name in one file is the k-th launch
of that name in every other), never by ID alone, because launches can be
reordered between profiled runs.

What the roofline model needs, and what happens when it is absent:

================================  ======================================  ==========================================
quantity                          metric(s)                               when absent
================================  ======================================  ==========================================
duration                          ``gpu__time_duration.sum``, else        **required**
                                  ``sm__cycles_elapsed.avg`` /
                                  ``sm__cycles_elapsed.avg.per_second``
bytes at L1, L2, DRAM             ``l1tex__t_bytes.sum``,                 **required** (eqs. 4, 6-8, 10)
                                  ``lts__t_bytes.sum``, ``dram__bytes.sum``
FMA/ADD/MUL thread instructions   ``sm__sass_thread_inst_executed_op_``   **required** for at least one precision
per precision (FP64, FP32, FP16)  ``{d,f,h}{fma,add,mul}_pred_on.sum``    (all three ops); a precision with none of
                                                                          its three counters counts 0 FLOP (noted);
                                                                          one with only some of them is rejected
shared-memory bytes               ``sm__sass_data_bytes_mem_shared.sum``  shared traffic taken as 0 (noted)
shared-memory bank efficiency     ``l1tex__data_pipe_lsu_wavefronts_``    conflict-free (128 B/cycle) assumed (noted);
                                  ``mem_shared.sum`` (or bank conflicts)  with bank conflicts only: wavefronts =
                                                                          bytes/128 + conflicts
active threads per warp inst.     ``smsp__thread_inst_executed_per_``     32 assumed, full warps (noted)
                                  ``inst_executed.ratio``
tensor-pipe instructions          ``sm__inst_executed_pipe_tensor.sum``   taken as 0; when present and non-zero the
                                                                          roofline computes those launches at the
                                                                          tensor peak of their precision
================================  ======================================  ==========================================

The output is a :class:`KernelMetrics`: a pandas DataFrame with one row per
launch, in the first file's launch order::

    kernel        occurrence  id  duration_s  fp32_fma_inst ... l1_bytes  l2_bytes  dram_bytes ...
    fill_kernel   0           0   2.1e-06     0.0               4.1e+04   4.2e+04   6.98e+03
    L2NormFunctor 0           1   6.0e-05     1.03e+07          4.1e+07   4.1e+07   4.4e+07

Missing optional metrics are NaN columns; the model applies the fallbacks
above and says so in its notes.

The metric ids, the ncu command and the units are ``ncu_metrics``'s; one
file is read by ``ncu_file``; this module joins the files of one run
(``read_ncu_csv``) and joins the launches to a Trace (``join_trace``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from nodecast.errors import InputError
from nodecast.traces.kinds import OpKind
from nodecast.traces.ncu_file import FileData, read_file
from nodecast.traces.ncu_metrics import (
    COLUMN_METRIC,
    CYCLE_RATE,
    CYCLES,
    DRAM_BYTES,
    DURATION,
    FLOP_METRICS,
    FLOP_OPS,
    L1_BYTES,
    L2_BYTES,
    NCU_COMMAND,
    NCU_METRICS,
    PRECISION_LETTER,
    SHARED_BYTES,
    SHARED_CONFLICTS,
    SHARED_WAVEFRONTS,
    TENSOR_INST,
    THREADS_PER_INST,
    is_rate,
    is_time,
    parse_unit,
)
from nodecast.traces.trace import Trace, TraceMeta

#: Names kept here for the modules that import them from here (the metric ids live in ``ncu_metrics``).
__all__ = ["COLUMN_METRIC", "DURATION", "FLOP_OPS", "NCU_COMMAND", "NCU_METRICS", "PRECISION_LETTER", "KernelMetrics",
           "base_kernel_name", "join_trace", "parse_unit", "read_ncu_csv", "trace_from_metrics"]

_FIX = "Collect the metrics with the command `nodecast kernels --print-ncu-command` prints"

# -- several files -------------------------------------------------------------------
@dataclass
class KernelMetrics:
    """Per-launch Nsight Compute metrics in SI units (see the module docstring).

    ``table`` has one row per launch: ``kernel`` (name), ``occurrence`` (0 for
    the first launch of that name, 1 for the second...), ``id`` (ncu's launch
    ID in the first file), ``duration_s`` and the ``COLUMN_METRIC`` columns
    (NaN where the profile lacks the metric). ``present`` holds the ncu metric
    ids found; ``notes`` say which fallbacks apply.
    """

    table: pd.DataFrame
    sources: list[str]
    present: frozenset[str]
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.table)

    @property
    def kernel_names(self) -> list[str]:
        """Distinct kernel names in first-launch order."""
        return list(dict.fromkeys(self.table["kernel"]))

    @property
    def precisions(self) -> list[str]:
        """Precisions whose three FMA/ADD/MUL counters were profiled."""
        return [p for p in PRECISION_LETTER
                if all(FLOP_METRICS[(p, o)] in self.present for o in FLOP_OPS)]

    def flop(self) -> np.ndarray:
        """FLOP per launch over the profiled precisions (an FMA counts 2), eq. 2's numerators."""
        total = np.zeros(len(self.table))
        for p in self.precisions:
            t = self.table
            total += 2.0 * t[f"{p}_fma_inst"].to_numpy() + t[f"{p}_add_inst"].to_numpy() \
                + t[f"{p}_mul_inst"].to_numpy()
        return total

    def take(self, rows: np.ndarray | Sequence[int]) -> KernelMetrics:
        """A KernelMetrics with the selected rows (occurrence numbers kept)."""
        return KernelMetrics(self.table.iloc[np.asarray(rows)].reset_index(drop=True),
                             self.sources, self.present, list(self.notes))


def _describe(paths: Sequence[Path]) -> str:
    return str(paths[0]) if len(paths) == 1 else f"{paths[0]} (+{len(paths) - 1} more files)"


def read_ncu_csv(paths: str | Path | Sequence[str | Path]) -> KernelMetrics:
    """Read one or several Nsight Compute CSV files into a :class:`KernelMetrics`.

    Several files are joined by kernel name and occurrence; a metric found in
    several files is taken from the first. Raises InputError (naming the
    file, the metric and the reason) when a file is not an ncu CSV, when a
    metric the roofline model requires is missing, when files disagree on
    the launches, or when a launch has no positive duration.
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    files = [Path(p) for p in paths]
    if not files:
        raise InputError("no metrics file given", key="METRICS.csv", hint="Give at least one ncu CSV file")
    data = [read_file(p) for p in files]
    first = data[0]
    n = len(first.ids)
    codes, uniques = pd.factorize(pd.Series([fd_name for fd in data for fd_name in fd.names], dtype=object))
    offsets = np.cumsum([0] + [len(fd.names) for fd in data])
    per_file_codes = [codes[offsets[i]:offsets[i + 1]].astype(np.int64) for i in range(len(data))]
    occ = [_occurrences_of(c) for c in per_file_codes]
    mult = int(max(o.max() for o in occ)) + 1
    first_key = pd.Index(per_file_codes[0] * mult + occ[0])
    values: dict[str, np.ndarray] = {}
    origin: dict[str, Path] = {}
    notes: list[str] = []
    for fd, c, o in zip(data, per_file_codes, occ, strict=True):
        rows = first_key.get_indexer(c * mult + o)
        if len(c) != n or (rows < 0).any():
            _launch_mismatch(first, fd, [str(u) for u in uniques], per_file_codes[0], c)
        for metric in sorted(fd.values):
            if metric in values:
                if metric in NCU_METRICS:
                    notes.append(f"{metric} is in {origin[metric].name} and {fd.path.name}: "
                                 f"the values of {origin[metric].name} are used")
                continue
            column = np.full(n, math.nan)
            column[rows] = fd.values[metric]
            values[metric] = column
            origin[metric] = fd.path
    present = frozenset(values)
    table = pd.DataFrame({
        "kernel": pd.Series(first.names, dtype=object),
        "occurrence": occ[0],
        "id": first.ids,
    })
    where = _describe(files)
    table["duration_s"] = _duration(values, first, data, origin, where, notes)
    for column, metric in COLUMN_METRIC.items():
        table[column] = values.get(metric, np.full(n, math.nan))
    if CYCLE_RATE in values:
        table["sm_clock_hz"] = values[CYCLE_RATE]
    _check_units(data, origin)
    _check_required(table, present, values, origin, where, notes)
    _check_duration_metrics(table, values, origin)
    _check_durations(table, where)
    return KernelMetrics(table, [str(p) for p in files], present, notes)


def _launch_mismatch(first: FileData, other: FileData, names: list[str], first_codes: np.ndarray,
                     codes: np.ndarray) -> None:
    a = np.bincount(first_codes, minlength=len(names))
    b = np.bincount(codes, minlength=len(names))
    for i in np.flatnonzero(a != b):
        name = names[int(i)]
        short = name if len(name) <= 60 else name[:57] + "..."
        raise InputError(
            f"kernel {short!r} has {a[i]} launches in {first.path.name} but {b[i]} here",
            path=other.path,
            hint="Files joined by kernel name and occurrence must profile the same launches "
                 "(same program, same --launch-skip/--launch-count)")


def _duration(values: dict[str, np.ndarray], first: FileData, data: list[FileData],
              origin: dict[str, Path], where: str, notes: list[str]) -> np.ndarray:
    if DURATION in values:
        return values[DURATION]
    if CYCLES in values and CYCLE_RATE in values:
        notes.append(f"duration = {CYCLES} / {CYCLE_RATE} (NERSC; no {DURATION} in the profile)")
        with np.errstate(divide="ignore", invalid="ignore"):
            return values[CYCLES] / values[CYCLE_RATE]
    missing = DURATION if CYCLES not in values and CYCLE_RATE not in values else (
        CYCLE_RATE if CYCLES in values else CYCLES)
    raise InputError(
        f"missing metric {missing}: kernel durations need {DURATION}, or {CYCLES} with {CYCLE_RATE}"
        + _page_hint(data),
        path=where, hint=_FIX)


def _page_hint(data: list[FileData]) -> str:
    names = sorted(set().union(*(fd.metric_names for fd in data)))
    if names and not any("__" in m for m in names):
        sample = ", ".join(repr(m) for m in names[:3])
        return (f" (found section metrics such as {sample}: this looks like `--page details` "
                "section output, not metric ids)")
    return ""


def _check_units(data: list[FileData], origin: dict[str, Path]) -> None:
    # The cycle count and its rate give the duration when gpu__time_duration.sum is absent: a wrong unit
    # there (furlong, byte) would make every kernel time wrong without a word.
    checks = {DURATION: is_time, CYCLES: lambda d: d == "cycle", CYCLE_RATE: is_rate}
    for metric in (L1_BYTES, L2_BYTES, DRAM_BYTES, SHARED_BYTES):
        checks[metric] = lambda d: d == "byte"
    for metric, ok in checks.items():
        if metric not in origin:
            continue
        fd = next(f for f in data if f.path == origin[metric])
        unit = fd.units.get(metric, "")
        _, dims = parse_unit(unit)
        if unit and not ok(dims):
            raise InputError(f"unit {unit!r} is not a unit of this metric", path=fd.path, key=metric,
                             hint="Export again with --print-units base")


def _check_required(table: pd.DataFrame, present: frozenset[str], values: dict[str, np.ndarray],
                    origin: dict[str, Path], where: str, notes: list[str]) -> None:
    for metric, what in ((L1_BYTES, "bytes at L1"), (L2_BYTES, "bytes at L2"), (DRAM_BYTES, "bytes at DRAM")):
        if metric not in present:
            raise InputError(f"missing metric {metric} (the roofline model needs the {what}, eqs. 4-10)",
                             path=where, key=metric, hint=_FIX)
    complete = []
    for prec in PRECISION_LETTER:
        have = [o for o in FLOP_OPS if FLOP_METRICS[(prec, o)] in present]
        if len(have) == 3:
            complete.append(prec)
        elif have:
            lack = [FLOP_METRICS[(prec, o)] for o in FLOP_OPS if o not in have]
            raise InputError(
                f"missing metric {lack[0]}: {prec.upper()} has {', '.join(have)} counts but not "
                f"{', '.join(o for o in FLOP_OPS if o not in have)} (eq. 2 needs all three)",
                path=where, key=lack[0], hint=_FIX)
        else:
            notes.append(f"{prec.upper()} counters (sm__sass_thread_inst_executed_op_{PRECISION_LETTER[prec]}"
                         f"{{fma,add,mul}}_pred_on.sum) not profiled: {prec.upper()} FLOP taken as 0")
    if not complete:
        raise InputError("missing metric sm__sass_thread_inst_executed_op_ffma_pred_on.sum: no precision "
                         "has its FMA, ADD and MUL instruction counts (FLOP = 2 FMA + ADD + MUL)",
                         path=where, key=FLOP_METRICS[("fp32", "fma")], hint=_FIX)
    needed = [L1_BYTES, L2_BYTES, DRAM_BYTES] + [FLOP_METRICS[(p, o)] for p in complete for o in FLOP_OPS]
    for metric in needed:
        bad = ~np.isfinite(values[metric]) | (values[metric] < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"no valid value for launch {_who(table, i)}: it has {_plain(values[metric][i])}, "
                             "not a finite number >= 0", path=origin[metric], key=metric,
                             hint="Profile that launch again")
    if SHARED_BYTES not in present:
        notes.append(f"no shared-memory metric ({SHARED_BYTES}): shared-memory traffic taken as 0 "
                     "(eqs. 5-6 without the shared term)")
    elif SHARED_WAVEFRONTS not in present:
        if SHARED_CONFLICTS in present:
            notes.append(f"no {SHARED_WAVEFRONTS}: wavefronts = shared bytes/128 + {SHARED_CONFLICTS}")
        else:
            notes.append(f"no {SHARED_WAVEFRONTS} nor bank-conflict counts: shared memory assumed "
                         "conflict-free (128 B/cycle, eq. 5)")
    if THREADS_PER_INST not in present:
        notes.append(f"no {THREADS_PER_INST}: 32 active threads per warp instruction assumed "
                     "(eq. 3 ceiling = op-mix ceiling)")
    if TENSOR_INST in present:
        used = int(np.nansum(values[TENSOR_INST] > 0))
        if used:
            notes.append(f"{used} launches executed tensor-pipe instructions ({TENSOR_INST} > 0): "
                         "modelled at the tensor peak of their precision")


def _who(table: pd.DataFrame, i: int) -> str:
    name = str(table["kernel"].iat[i])
    short = name if len(name) <= 60 else name[:57] + "..."
    return f"ID {table['id'].iat[i]} ({short!r}, occurrence {table['occurrence'].iat[i]})"


def _plain(x: float) -> str:
    """A metric value for messages: ``value 0``, ``value -770.87``, ``value inf``, or NaN's ``no number (...)``."""
    x = float(x)
    return "no number (the cell is empty, n/a or text)" if math.isnan(x) else f"value {x:g}"


def _check_duration_metrics(table: pd.DataFrame, values: dict[str, np.ndarray], origin: dict[str, Path]) -> None:
    """The first launch whose duration metric (or cycles, or cycle rate) is not a finite number > 0, by file and metric."""
    for metric in (DURATION,) if DURATION in values else (CYCLES, CYCLE_RATE):
        v = values[metric]
        bad = ~np.isfinite(v) | (v <= 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"launch {_who(table, i)} has {_plain(v[i])}; durations must be > 0 and finite",
                             path=origin[metric], key=metric,
                             hint="Profile that launch again; a zero or missing duration cannot be projected")


def _check_durations(table: pd.DataFrame, where: str) -> None:
    d = table["duration_s"].to_numpy()
    bad = ~np.isfinite(d) | (d <= 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"launch {_who(table, i)} has duration {float(d[i]):g} s; durations must be > 0",
                         path=where, key="duration",
                         hint="Profile again; a zero duration cannot be projected")


# -- joining to a Trace ----------------------------------------------------------------
_SPACES_RE = re.compile(r"\s+")


def base_kernel_name(name: str) -> str:
    """A kernel name without a leading ``void`` and its trailing parameter list.

    ``"void k<2>(float*, int)"`` -> ``"k<2>"``. Used to join ncu names
    (demangled with parameters) to trace names that may lack them.
    """
    s = name.strip()
    if s.startswith("void "):
        s = s[5:]
    if s.endswith(")"):
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            c = s[i]
            if c == ")":
                depth += 1
            elif c == "(":
                depth -= 1
                if depth == 0:
                    s = s[:i]
                    break
    return _SPACES_RE.sub(" ", s).strip()


def _occurrences_of(codes: np.ndarray) -> np.ndarray:
    """For each element, how many earlier elements have the same code (0 for the first), vectorized."""
    n = len(codes)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    idx = np.arange(n)
    first = np.r_[True, sorted_codes[1:] != sorted_codes[:-1]]
    group_start = np.maximum.accumulate(np.where(first, idx, 0))
    occ = np.empty(n, dtype=np.int64)
    occ[order] = idx - group_start
    return occ


def join_trace(metrics: KernelMetrics, trace: Trace) -> np.ndarray:
    """Row of ``metrics`` for every op of ``trace`` (-1 where none), by kernel name and launch order.

    The k-th kernel launch of a name in the trace (in GPU order) takes the
    k-th launch of that name in the metrics. Names match exactly, or else
    after dropping ``void`` and the parameter list on both sides.
    """
    out = np.full(len(trace), -1, dtype=np.int64)
    kernel_rows = np.flatnonzero(trace["kind"] == OpKind.KERNEL)
    if kernel_rows.size == 0 or len(metrics) == 0:
        return out
    m_codes, uniques = pd.factorize(metrics.table["kernel"])
    code_of = {str(n): i for i, n in enumerate(uniques)}
    by_base: dict[str, int] | None = None
    lookup = []
    for name in trace.names:  # distinct names only: small
        code = code_of.get(name, -1)
        if code < 0:
            if by_base is None:
                by_base = {}
                for n, i in code_of.items():
                    by_base.setdefault(base_kernel_name(n), i)
            code = by_base.get(base_kernel_name(name), -1)
        lookup.append(code)
    lookup.append(-1)  # name_id -1: no name
    t_codes = np.asarray(lookup, dtype=np.int64)[trace["name_id"][kernel_rows]]
    keep = t_codes >= 0
    rows, t_codes = kernel_rows[keep], t_codes[keep]
    if rows.size == 0:
        return out
    t_occ = _occurrences_of(t_codes)
    m_occ = metrics.table["occurrence"].to_numpy(dtype=np.int64)
    mult = int(max(m_occ.max(), t_occ.max())) + 1
    m_key = pd.Index(m_codes.astype(np.int64) * mult + m_occ)
    if not m_key.is_unique:  # hand-built tables may repeat occurrences: number them in row order
        m_key = pd.Index(m_codes.astype(np.int64) * mult + _occurrences_of(m_codes.astype(np.int64)))
    idx = m_key.get_indexer(t_codes * mult + t_occ)
    hit = idx >= 0
    out[rows[hit]] = idx[hit]
    return out


def trace_from_metrics(metrics: KernelMetrics) -> Trace:
    """A Trace of the profiled kernel launches, one op per metrics row, in metrics order.

    An ncu CSV holds durations but no timestamps: launches are placed
    back-to-back from t = 0 (the trace's notes say so).
    """
    t = metrics.table
    codes, uniques = pd.factorize(t["kernel"])
    names = [str(n) for n in uniques]
    dur_ns = np.maximum(np.rint(t["duration_s"].to_numpy() * 1e9), 1).astype(np.int64)
    end = np.cumsum(dur_ns)
    meta = TraceMeta(source=", ".join(Path(s).name for s in metrics.sources[:1])
                     + (f" (+{len(metrics.sources) - 1} files)" if len(metrics.sources) > 1 else ""),
                     format="ncu-csv", profiler="Nsight Compute",
                     notes=["ncu CSV has no timestamps: launches placed back-to-back in CSV order"])
    return Trace.from_columns(
        {"kind": np.full(len(t), OpKind.KERNEL), "start_ns": end - dur_ns, "end_ns": end,
         "name_id": codes.astype(np.int32),
         "correlation": t["id"].to_numpy()},
        names, meta, sort=False)
