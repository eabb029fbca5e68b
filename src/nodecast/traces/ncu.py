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
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from nodecast.errors import InputError
from nodecast.inputs import read_input
from nodecast.traces.kinds import OpKind
from nodecast.traces.trace import Trace, TraceMeta

# -- metric ids --------------------------------------------------------------------
DURATION = "gpu__time_duration.sum"
CYCLES = "sm__cycles_elapsed.avg"
CYCLE_RATE = "sm__cycles_elapsed.avg.per_second"
L1_BYTES = "l1tex__t_bytes.sum"
L2_BYTES = "lts__t_bytes.sum"
DRAM_BYTES = "dram__bytes.sum"
SHARED_BYTES = "sm__sass_data_bytes_mem_shared.sum"
SHARED_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
SHARED_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"
THREADS_PER_INST = "smsp__thread_inst_executed_per_inst_executed.ratio"
TENSOR_INST = "sm__inst_executed_pipe_tensor.sum"

#: Precisions whose FMA/ADD/MUL counters ncu provides, with the letter in the metric name.
PRECISION_LETTER = {"fp64": "d", "fp32": "f", "fp16": "h"}
#: Floating-point operations of eq. 2.
FLOP_OPS = ("fma", "add", "mul")
#: (precision, op) -> ncu metric counting its thread instructions (predicated on).
FLOP_METRICS: dict[tuple[str, str], str] = {
    (prec, op): f"sm__sass_thread_inst_executed_op_{letter}{op}_pred_on.sum"
    for prec, letter in PRECISION_LETTER.items()
    for op in FLOP_OPS
}

#: Every metric of the command below, in order.
NCU_METRICS: tuple[str, ...] = (
    DURATION,
    CYCLES,
    CYCLE_RATE,
    *FLOP_METRICS.values(),
    L1_BYTES,
    L2_BYTES,
    DRAM_BYTES,
    SHARED_BYTES,
    SHARED_WAVEFRONTS,
    THREADS_PER_INST,
    TENSOR_INST,
)

#: The Nsight Compute command that collects everything the roofline model uses
#: in one wide CSV (one row per launch, base units). ``nodecast kernels
#: --print-ncu-command`` prints it. A saved report converts offline with
#: ``ncu --import report.ncu-rep --csv --page raw --print-units base``.
NCU_COMMAND = (
    "ncu --target-processes all --csv --page raw --print-units base --metrics "
    + ",".join(NCU_METRICS)
    + " ./your_app [args] > metrics.csv"
)

#: Column of the metrics table -> the ncu metric it comes from.
COLUMN_METRIC: dict[str, str] = {
    **{f"{p}_{o}_inst": m for (p, o), m in FLOP_METRICS.items()},
    "l1_bytes": L1_BYTES,
    "l2_bytes": L2_BYTES,
    "dram_bytes": DRAM_BYTES,
    "shared_bytes": SHARED_BYTES,
    "shared_wavefronts": SHARED_WAVEFRONTS,
    "shared_bank_conflicts": SHARED_CONFLICTS,
    "threads_per_inst": THREADS_PER_INST,
    "tensor_inst": TENSOR_INST,
}

_FIX = "Collect the metrics with the command `nodecast kernels --print-ncu-command` prints"

# -- units ---------------------------------------------------------------------------
_PREFIX = {
    "": 1.0, "n": 1e-9, "u": 1e-6, "µ": 1e-6, "m": 1e-3,
    "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
    "Ki": 1024.0, "Mi": 1024.0**2, "Gi": 1024.0**3, "Ti": 1024.0**4,
}
#: Unit names ncu prints (full and short), longest first so that "second" wins over "s".
_BASES = (("second", "second"), ("byte", "byte"), ("cycle", "cycle"), ("inst", "inst"),
          ("hz", "hz"), ("B", "byte"), ("s", "second"))


def parse_unit(unit: str) -> tuple[float, str]:
    """Scale factor to SI base units and the base dimension of an ncu unit string.

    ``"usecond"`` -> ``(1e-6, "second")``; ``"Mbyte"`` -> ``(1e6, "byte")``;
    ``"cycle/nsecond"`` -> ``(1e9, "cycle/second")``; ``"GHz"`` -> ``(1e9, "hz")``.
    ncu's K/M/G prefixes are decimal (1 Kbyte = 1000 bytes); ``Ki``/``Mi``/``Gi``
    are binary. An unknown unit (``%``, ``inst``, ``""``, ``warp``) scales by 1.
    """
    text = unit.strip()
    if text in ("", "%"):
        return 1.0, text
    factor = 1.0
    dims = []
    for i, part in enumerate(text.split("/")):
        f, base = _unit_component(part.strip())
        factor = factor * f if i == 0 else factor / f
        dims.append(base)
    return factor, "/".join(dims)


def _unit_component(part: str) -> tuple[float, str]:
    for name, canonical in _BASES:
        if name == "hz":
            matched = part.lower().endswith("hz")
        else:
            matched = part.endswith(name)
        if matched:
            prefix = part[: len(part) - len(name)]
            if prefix in _PREFIX:
                return _PREFIX[prefix], canonical
    return 1.0, part


def _is_time(dims: str) -> bool:
    return dims == "second"


def _is_rate(dims: str) -> bool:
    return dims in ("cycle/second", "hz", "/second", "1/second")


# -- one file ------------------------------------------------------------------------
_IDENTITY = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Function Name",
             "Kernel Time", "Context", "Stream", "Block Size", "Grid Size", "Device", "CC",
             "Section Name", "Metric Name", "Metric Unit", "Metric Value", "Rule Name",
             "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup"}


@dataclass
class _FileData:
    """One file's launches (sorted by ID) and metric columns in SI units, aligned with ``ids``."""

    path: Path
    layout: str  # "wide" or "long"
    ids: np.ndarray
    names: list[str]
    values: dict[str, np.ndarray]
    units: dict[str, str]

    @property
    def metric_names(self) -> set[str]:
        return set(self.values)


def _find_header(lines: list[str], path: Path) -> int:
    for i, line in enumerate(lines):
        s = line.lstrip("\ufeff").strip()
        if s.startswith('"ID"') and ('"Kernel Name"' in s or '"Function Name"' in s):
            return i
    text = "\n".join(lines[:200])
    if "Invocations" in text and "Metric Name" in text:
        hint = "This looks like nvprof --metrics output; nodecast reads Nsight Compute CSV (ncu --csv)"
    elif "==PROF==" in text:
        hint = "ncu ran but printed no CSV table: did it profile any kernel, and was --csv given?"
    else:
        hint = "Export with `ncu --csv --page raw` (or `ncu --csv --metrics ...`)"
    raise InputError('no Nsight Compute CSV header (a row starting with "ID" that names "Kernel Name")',
                     path=path, hint=hint)


_THOUSANDS = r"^\s*[-+]?\d{1,3}(,\d{3})+(\.\d*)?([eE][-+]?\d+)?\s*$"


def _numeric(values: np.ndarray, path: Path | None = None, what: str = "") -> np.ndarray:
    """Metric values as floats: thousands separators removed; n/a, empty and text as NaN (vectorized).

    A comma that is not a thousands separator (``"1,5"``, ``"1.234,5"``: a
    decimal-comma locale) is an InputError rather than a silent misreading.
    """
    ser = pd.Series(values, dtype=object).astype(str)
    commas = ser.str.contains(",", regex=False)
    if commas.any():
        bad = commas & ~ser.str.match(_THOUSANDS)
        if bad.any():
            raise InputError(f"value {ser[bad].iloc[0]!r} uses a decimal comma", path=path, key=what or None,
                             hint="Export again with LC_ALL=C so that decimals use a point")
        ser = ser.str.replace(",", "", regex=False)
    return pd.to_numeric(ser.str.strip(), errors="coerce").to_numpy(dtype=np.float64)


def _read_one(path: Path) -> _FileData:
    try:
        raw = read_input(path, what="metrics file")  # bounded; /dev/zero refused: see nodecast.inputs
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror})", path=path) from None
    lines = raw.decode("utf-8", errors="replace").splitlines()
    start = _find_header(lines, path)
    lines[start] = lines[start].lstrip("\ufeff")
    reader = csv.reader(io.StringIO("\n".join(lines[start:])))
    header = [h.strip() for h in next(reader)]
    col = {h: i for i, h in enumerate(header)}
    name_col = col.get("Kernel Name", col.get("Function Name"))
    id_col = col["ID"]
    long = "Metric Name" in col and "Metric Value" in col
    width = len(header)
    body: list[list[str]] = []
    units_row: list[str] | None = None
    line_no = start + 1
    for row in reader:  # the csv module's C reader; no per-value Python work here
        line_no += 1
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if row[0].startswith("=="):  # ==PROF== / ==WARNING== lines after the table
            continue
        if len(row) != width:
            raise InputError(f"row has {len(row)} fields, the header has {width}", path=path,
                             key=f"line {line_no}",
                             hint="The CSV is truncated or mixed with other output; export it again")
        if not long and not row[id_col].strip():  # the units row of --page raw
            units_row = row
            continue
        body.append(row)
    if not body:
        raise InputError("the CSV header is there but no kernel launch follows", path=path,
                         hint="Check that ncu profiled at least one kernel")
    cells = np.array(body, dtype=object)
    ids = _numeric(cells[:, id_col], path, "ID")
    if not np.isfinite(ids).all() or (ids != np.round(ids)).any():
        bad = cells[int(np.flatnonzero(~np.isfinite(ids) | (ids != np.round(ids)))[0]), id_col]
        raise InputError(f"launch ID {bad!r} is not an integer", path=path,
                         hint="Is this an Nsight Compute CSV export?")
    ids = ids.astype(np.int64)
    names_all = np.array([str(n).strip() for n in cells[:, name_col]], dtype=object)  # type: ignore[index]
    if long:
        frame = pd.DataFrame({
            "id": ids, "metric": [str(m).strip() for m in cells[:, col["Metric Name"]]],
            "unit": ([str(u).strip() for u in cells[:, col["Metric Unit"]]] if "Metric Unit" in col
                     else [""] * len(ids)),
            "raw": cells[:, col["Metric Value"]],
        })
        frame = frame[frame["metric"] != ""]
        factors = {u: parse_unit(u)[0] for u in frame["unit"].unique()}
        frame["value"] = _numeric(frame["raw"].to_numpy(), path, "Metric Value") * frame["unit"].map(factors).to_numpy()
        first = frame.drop_duplicates(["id", "metric"])
        uid = np.unique(ids)
        wide = first.pivot(index="id", columns="metric", values="value").reindex(uid)
        values = {str(m): wide[m].to_numpy(dtype=np.float64) for m in wide.columns}
        units = dict(zip(first.drop_duplicates("metric")["metric"], first.drop_duplicates("metric")["unit"],
                         strict=True))
        name_of = dict(zip(ids.tolist(), names_all.tolist(), strict=True))
        names = [name_of[i] for i in uid.tolist()]
    else:
        uid, first_row = np.unique(ids, return_index=True)
        metric_cols = [(i, h) for i, h in enumerate(header) if h not in _IDENTITY and h]
        units = {h: (units_row[i].strip() if units_row is not None else "") for i, h in metric_cols}
        values = {h: _numeric(cells[first_row, i], path, h) * parse_unit(units[h])[0] for i, h in metric_cols}
        names = names_all[first_row].tolist()
    return _FileData(path, "long" if long else "wide", uid, names, values, units)


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
    data = [_read_one(p) for p in files]
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


def _launch_mismatch(first: _FileData, other: _FileData, names: list[str], first_codes: np.ndarray,
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


def _duration(values: dict[str, np.ndarray], first: _FileData, data: list[_FileData],
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


def _page_hint(data: list[_FileData]) -> str:
    names = sorted(set().union(*(fd.metric_names for fd in data)))
    if names and not any("__" in m for m in names):
        sample = ", ".join(repr(m) for m in names[:3])
        return (f" (found section metrics such as {sample}: this looks like `--page details` "
                "section output, not metric ids)")
    return ""


def _check_units(data: list[_FileData], origin: dict[str, Path]) -> None:
    # The cycle count and its rate give the duration when gpu__time_duration.sum is absent: a wrong unit
    # there (furlong, byte) would make every kernel time wrong without a word.
    checks = {DURATION: _is_time, CYCLES: lambda d: d == "cycle", CYCLE_RATE: _is_rate}
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
