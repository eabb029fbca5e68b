"""``nvprof --print-gpu-trace --csv`` output -> Trace.

Layout: a header row (``"Start","Duration",...,"Name"``), a units row
(``s,s,,,...,KB,GB/s,...``), then one row per GPU op; several runs may be
concatenated, each with its own header and units rows, and nvprof's own
``==PID==`` / ``========`` lines may be interleaved. Units can change from one
block to the next (``KB`` in one run, ``MB`` in the next).

Decisions:

- Size units are binary in some nvprof versions and decimal in others, and
  the units row says only ``KB``. The K40c sample is binary: a VecAdd of
  512x256 floats copies 524,288 B, printed as ``512.000000`` KB, and its
  Throughput column (9.304140 GB/s for 524,288 B in 52.48 us) is bytes / 2^30
  per second. The kernel-zoo files of the GTX TITAN are decimal: a 65,536-int
  copy is ``262.144000`` KB next to ``256.000000`` KB on the other three
  GPUs, and its Throughput (10.569896 GB/s in 24.801 us) is bytes / 1e9 per
  second. So the base is read off the data, per run: the one (1024 or 1000)
  under which Size / Duration equals Throughput (``size_base``; the two
  differ by 2.4 % per prefix, the printed digits agree to 1e-5). When Size
  and Throughput carry the same prefix (``GB`` and ``GB/s``) the base cancels
  out and the run cannot tell; it then takes the base the file's other runs
  showed (one nvprof wrote them all), else binary, with a note. In the
  kernel zoo, 579 of the 594 TITAN files show base 1000 and the other 15
  (the largest inputs, printed in GB and GB/s) cannot tell; 357 of 359 GTX
  680 files and 588 of 594 GTX 970 and Tesla K20c files show base 1024, and
  none shows the other base (tests/traces/test_nvprof_csv.py).
  ``Dynamic SMem`` and ``Static SMem`` use the same base.
  Sizes are rounded to whole bytes (six printed decimals cannot always be
  exact in MB or GB).
- Kernel rows keep ``Registers Per Thread``, ``Static SMem`` and ``Dynamic
  SMem`` (per block, in the units row's unit) as the occupancy columns;
  the CSV has no local-memory column (``NOT_RECORDED``).
- Times are converted to integer ns from the unit of their block.
- Several runs in one file (``nvprof ... >> file`` once per input size, as
  in the K40c sample): each is a separate process whose Start column counts
  from its own start, so the time between two runs was measured by no
  clock: read as is, a later run may overlap the one before it or leave a
  gap that is only the difference of two unrelated origins. A run begins at
  each header block, and also where a row starts before the row above it in
  the same block (runs pasted without their header: nvprof prints a run's
  rows in start order, which no file of the kernel zoo breaks). The runs are
  joined back to back, in file order: each is shifted, as a whole, to start
  where the previous one ended, so the ops of a run keep their times
  relative to each other and the trace's end to end is the sum of the runs'
  spans (first GPU op start to last GPU op end of each), which is what a
  performance engineer timing the runs one after another would add up; the
  time between runs (process start-up, the shell) is not counted because
  the file does not hold it. A note (``nodecast.notes.RUNS_JOINED``) says
  so, weighed by the share of the joined end to end that lies after the
  first run (all of it rests on the joining), so that ``replay`` and
  ``forecast`` print it whenever the later runs are more than 3 % of it.
- Kernel rows end with `` [N]``, the correlation id of the launching API
  call: it becomes ``correlation`` and is cut from the name. A
  ``Correlation_ID`` column (newer nvprof) wins when present.
- ``SrcMemType``/``DstMemType`` columns (newer nvprof) give memory kinds;
  without them memory kinds stay UNKNOWN. There are no CPU API times.
- Bracketed rows that are neither copies nor memsets (unified-memory page
  faults...) are skipped and counted in ``meta.notes``.
- nvprof's one-field trailer ``No kernels were profiled.`` (written after a
  run that profiled nothing, which may follow another run's rows or end the
  file) is skipped wherever it appears, and counted in ``meta.notes``.
- A file cut inside its last row (inside a quoted field, or with fewer
  fields than its header) is an InputError giving the line, as are numbers
  that are NaN, infinite or beyond 2^62 ns or bytes (``nodecast.values``
  names the column and line), and ops that end before they start.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

import numpy as np

from nodecast import notes as nn
from nodecast.errors import InputError
from nodecast.inputs import read_input
from nodecast.words import plural
from nodecast.traces import _common
from nodecast.traces.kinds import CopyKind, MemKind, OpKind
from nodecast.traces.reader import TEXT, Reader, without_api
from nodecast.traces.trace import NOT_RECORDED, Trace, TraceMeta
from nodecast.values import as_float, as_int

FORMAT = "nvprof-csv"

#: Seconds -> ns.
TIME_UNITS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
#: Size unit -> power of the base (1024 or 1000, see ``size_base``) that makes it bytes.
SIZE_POWERS = {"B": 0, "KB": 1, "MB": 2, "GB": 3, "TB": 4}
#: Binary size units (the base nvprof uses when a run cannot tell), unit -> bytes.
SIZE_UNITS = {u: 1024**p for u, p in SIZE_POWERS.items()}
#: Largest relative disagreement between Size / Duration and Throughput that still identifies the base:
#: the printed digits agree to about 1e-5, the two bases differ by 2.4 % per prefix.
_BASE_TOLERANCE = 0.005

_DEVICE = re.compile(r"^(.*?)\s*\((\d+)\)\s*$")
_CORRELATION_SUFFIX = re.compile(r"^(.*\S)\s+\[(\d+)\]$")
_COPY = re.compile(r"^\[(?:CUDA|Unified Memory) [Mm]emcpy (\w+)\]$")

_UVM = {CopyKind.HTOD: CopyKind.UVM_HTOD, CopyKind.DTOH: CopyKind.UVM_DTOH, CopyKind.DTOD: CopyKind.UVM_DTOD}

_GRID = ("Grid X", "Grid Y", "Grid Z", "Block X", "Block Y", "Block Z")

#: One-field lines nvprof itself writes among the CSV rows (a run that profiled nothing).
NVPROF_TRAILERS = frozenset({"No kernels were profiled."})

_DAMAGED = "The file may be damaged; save the nvprof output again"


def looks_like_nvprof_csv(text: str) -> bool:
    """Whether the start of a text file has an nvprof GPU-trace header row."""
    return any(_is_gpu_header(line) for line in text.splitlines()[:200])


def _is_gpu_header(line: str) -> bool:
    # --print-api-trace blocks have "Start","Duration","Name","Correlation_ID" and no Device.
    return line.startswith('"Start","Duration"') and '"Name"' in line and '"Device"' in line


def read_nvprof_csv(path: str | Path) -> Trace:
    """Read ``nvprof --print-gpu-trace --csv`` output into a Trace (may hold zero ops)."""
    path = Path(path)
    try:
        text = read_input(path, what="trace").decode("utf-8", errors="replace")  # bounded: see nodecast.inputs
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror})", path=path) from None
    notes: list[str] = []
    blocks, trailers = _blocks(text, path)
    if trailers:
        notes.append(f"{plural(trailers, 'run')} printed nvprof's 'No kernels were profiled.'")
    api_blocks = [b for b in blocks if "Device" not in b[0]]
    if api_blocks:
        notes.append(f"ignored {sum(len(b[2]) for b in api_blocks)} API-trace rows (no CPU API times from CSV)")
        blocks = [b for b in blocks if "Device" in b[0]]
    bases = _file_bases([size_base(units, body) for _, units, body in blocks])
    _note_bases(bases, blocks, notes)
    ops = [_op(units, row, line, path, base) for (_, units, body), (base, _) in zip(blocks, bases, strict=True)
           for line, row in body]
    skipped = sum(op is None for op in ops)
    if skipped:
        notes.append(f"skipped {skipped} rows that are neither kernels, copies nor memsets")
    run_of, restarts = _run_of(blocks, ops)
    kept = [(op, run) for op, run in zip(ops, run_of, strict=True) if op is not None]
    n = len(kept)
    cols = _common.allocate(n)
    if n:
        fields = list(zip(*(op for op, _ in kept), strict=True))
        for name, values in zip(_FIELDS, fields, strict=True):
            if name == "name":
                continue
            try:
                cols[name][:] = values
            except OverflowError:  # numpy refuses (never wraps) a Python int beyond the column's type
                info = np.iinfo(cols[name].dtype)
                bad = next(v for v in values if not info.min <= v <= info.max)
                raise InputError(
                    f"a {name} value of {bad} is out of range (nodecast keeps it in {info.min}..{info.max})",
                    path=path,
                    hint="The file may be damaged",
                ) from None
        runs = np.array([run for _, run in kept], dtype=np.int64)
        joined = _join_runs(cols, runs, restarts)
        if joined is not None:
            notes.insert(0, joined)
        name_ids, names = _common.intern_strings(fields[_FIELDS.index("name")])
        cols["name_id"][:] = name_ids
    else:
        names = []
    gpus = {}
    for _, _, body in blocks:
        for _, row in body:
            m = _DEVICE.match(row.get("Device", "") or "")
            if m:
                gpus[int(m.group(2))] = m.group(1)
    profiler = "nvprof (--print-gpu-trace --csv)"
    meta = TraceMeta(source=str(path), format=FORMAT, profiler=profiler, gpus=gpus, notes=notes)
    return _common.finish(cols, names, meta)


#: The format's reader (``traces.formats``): a text file with an nvprof GPU-trace header row.
READER = Reader("nvprof-csv", lambda probe: probe.container == TEXT and looks_like_nvprof_csv(probe.text),
                read_nvprof_csv, without_api("nvprof-csv", "an nvprof GPU-trace CSV"))


Row = tuple[int, dict[str, str]]  # (line in the file, {column: text})


def _blocks(text: str, path: Path) -> tuple[list[tuple[list[str], dict[str, str], list[Row]]], int]:
    """Split the file into (header, units per column, data rows) blocks; also count nvprof's trailers.

    Each data row keeps its line number in the file, for messages. A file
    that ends inside a quoted field, or whose last data row has fewer fields
    than its header, was cut short: InputError with the line number, where
    the csv module would silently drop or shorten that row. nvprof's trailer
    lines (``NVPROF_TRAILERS``) are not rows, wherever they appear.
    """
    blocks: list[tuple[list[str], dict[str, str], list[Row]]] = []
    # Keep each line's number in the file for messages; blank and ==PID== lines are skipped.
    numbered = [(i, ln) for i, ln in enumerate(text.splitlines(), 1) if ln.strip() and not ln.startswith("==")]
    lines = [ln for _, ln in numbered]
    reader = csv.reader(io.StringIO("\n".join(lines)))
    header: list[str] | None = None
    units: dict[str, str] | None = None
    last_start: int | None = None  # index in ``lines`` of the first line of the last data row read
    trailers = 0
    while True:
        start = reader.line_num
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise InputError(
                f"unreadable CSV at line {numbered[max(1, min(reader.line_num, len(lines))) - 1][0]} ({exc})",
                path=path,
                hint="Save the nvprof output again",
            ) from None
        if len(record) == 1 and record[0].strip() in NVPROF_TRAILERS:
            trailers += 1
            continue
        if record[:2] == ["Start", "Duration"]:
            header, units, last_start = record, None, None
            blocks.append((header, {}, []))
            continue
        if header is None:
            continue  # program output before the first header
        if units is None:
            units = dict(zip(header, record, strict=False))
            if units.get("Start") not in TIME_UNITS:
                raise InputError(
                    f"the row after a header is not a units row (got Start unit {units.get('Start')!r})",
                    path=path,
                    hint="Expected nvprof --print-gpu-trace --csv output, where a units row follows each header",
                )
            blocks[-1] = (header, units, blocks[-1][2])
            continue
        last_start = start
        blocks[-1][2].append((numbered[start][0], dict(zip(header, record, strict=False))))
    if last_start is not None:
        # The file's last record, trailers aside, is a data row: a cut can only be there.
        _check_not_truncated(lines[last_start:], blocks[-1][0], numbered[last_start][0], path)
    return blocks, trailers


def _check_not_truncated(last: list[str], header: list[str], line: int, path: Path) -> None:
    """InputError when the last record (its lines ``last``, starting at file line ``line``) was cut short."""
    try:
        # strict: the end of the data inside a quoted field is an error, not a field.
        fields = next(csv.reader(io.StringIO("\n".join(last)), strict=True))
    except csv.Error:
        reason = "ends inside a quoted field"
    else:
        if len(fields) >= len(header):
            return
        reason = f"has {len(fields)} of the header's {len(header)} fields"
    raise InputError(
        f"the file looks truncated: its last row (line {line}) {reason}",
        path=path,
        hint="Save the nvprof output again; the copy may have been cut short",
    )


_FIELDS = (
    "kind",
    "copy_kind",
    "src_mem",
    "dst_mem",
    "bytes",
    "start_ns",
    "end_ns",
    "device",
    "src_device",
    "dst_device",
    "stream",
    "correlation",
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "registers_per_thread",
    "static_smem_bytes",
    "dynamic_smem_bytes",
    "name",
)

#: Occupancy inputs a kernel row carries: (CSV column, Trace column, whether the units row gives a size unit).
_OCCUPANCY = (("Registers Per Thread", "registers_per_thread", False), ("Static SMem", "static_smem_bytes", True),
              ("Dynamic SMem", "dynamic_smem_bytes", True))


#: Largest magnitude kept for a time (ns) or size (B): 2^62 leaves room for start + duration in an int64.
_LIMIT = 1 << 62


def _number(text: str | None, scale: int, path: Path, what: str, line: int) -> int:
    """A printed number in a unit -> integer in base units (rounded); empty -> 0.

    NaN, infinities and magnitudes beyond ``_LIMIT`` in base units are an
    InputError naming the column and the line (``nodecast.values.as_float``).
    """
    if not text:
        return 0
    bound = _LIMIT / scale  # in the file's unit, so that the message speaks the file's unit
    value = as_float(text.replace(",", ""), path=path, field=what, row=f"line {line}", ge=-bound, le=bound,
                     hint=_DAMAGED)
    return round(value * scale)


def _id(text: str | None, path: Path, what: str, line: int) -> int:
    """A stream or correlation id (an integer >= 0); -1 when the field is empty or absent."""
    if not text or not text.strip():
        return -1
    return as_int(text, path=path, field=what, row=f"line {line}", ge=0, hint=_DAMAGED)


def _size_scale(units: dict[str, str], column: str, base: int, path: Path) -> int:
    """Bytes per printed unit of a size column (``KB`` -> ``base``); InputError for a unit nvprof never prints."""
    unit = units.get(column, "B") or "B"
    if unit not in SIZE_POWERS:
        raise InputError(f"unknown size unit {unit!r} in column {column!r}", path=path,
                         hint=f"Expected one of {', '.join(SIZE_POWERS)}")
    return base ** SIZE_POWERS[unit]


def _rate_power(unit: str) -> int | None:
    """``GB/s`` -> 3 (bytes per second = value x base^3); None for a unit that is not a size per second."""
    size, sep, per = unit.partition("/")
    return SIZE_POWERS.get(size) if sep and per == "s" else None


def size_base(units: dict[str, str], body: list[Row]) -> tuple[int, int]:
    """The base (1024 or 1000) of a run's size units, and how many rows showed it (0: none could, binary).

    For every copy or memset row with a Size, a Duration and a Throughput,
    ``Size x base^k / Duration`` must equal ``Throughput x base^j`` (k, j the
    prefix powers of the Size and Throughput units); the base is the one whose
    median disagreement over those rows is below ``_BASE_TOLERANCE``. With no
    such row (or units without prefixes), or when neither base fits, 1024.
    """
    k = SIZE_POWERS.get(units.get("Size", "") or "")
    j = _rate_power(units.get("Throughput", "") or "")
    tscale = TIME_UNITS.get(units.get("Duration", "s"))
    if k is None or j is None or tscale is None or k == j:
        return 1024, 0  # with one prefix on both sides (GB and GB/s) the base cancels out: no evidence
    triples = []
    for _, row in body:
        try:
            size, dur, rate = (float(row.get(c) or "nan") for c in ("Size", "Duration", "Throughput"))
        except ValueError:
            continue  # damaged numbers are reported when the row itself is read
        if size > 0 and dur > 0 and rate > 0 and np.isfinite([size, dur, rate]).all():
            triples.append((size, dur * tscale * 1e-9, rate))
    if not triples:
        return 1024, 0
    a = np.array(triples)
    for base in (1024, 1000):
        implied = a[:, 0] * float(base) ** k / a[:, 1] / (a[:, 2] * float(base) ** j)
        if abs(float(np.median(implied)) - 1.0) < _BASE_TOLERANCE:
            return base, len(a)
    return 1024, 0


def _file_bases(bases: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Runs that cannot tell their base take the one the file's other runs showed, when those agree.

    The count stays 0 for them (nothing in their own rows showed it).
    """
    shown = {b for b, n in bases if n}
    if len(shown) != 1:
        return bases
    (base,) = shown
    return [(base if n == 0 else b, n) for b, n in bases]


def _note_bases(bases: list[tuple[int, int]], blocks: list, notes: list[str]) -> None:
    """One note saying which size units the runs use (and how that was told)."""
    decimal = sum(1 for b, _ in bases if b == 1000)
    shown = sum(1 for b, n in bases if n)
    prefixed = [i for i, (_, units, _) in enumerate(blocks)
                if any(SIZE_POWERS.get(units.get(c, "") or "", 0) for c in ("Size", "Static SMem", "Dynamic SMem"))]
    unproven = [i for i in prefixed if bases[i][1] == 0]
    if decimal:
        notes.append(f"sizes in decimal units (1 KB = 1000 B) in {decimal} of {plural(len(bases), 'run')}: "
                     "Size / Duration equals Throughput only with base 1000")
    elif shown:
        notes.append("sizes in binary units (1 KB = 1024 B): Size / Duration equals Throughput with base 1024")
    if unproven:
        unit = "decimal (1 KB = 1000 B)" if bases[unproven[0]][0] == 1000 else "binary (1 KB = 1024 B)"
        why = ", as the file's other runs show" if shown else ""
        one = len(unproven) == 1
        notes.append(f"{plural(len(unproven), 'run')} {'prints' if one else 'print'} sizes with a unit prefix that "
                     f"none of {'its' if one else 'their'} rows tells decimal from binary (no Size with Duration and "
                     f"Throughput, or the same prefix on both): {unit} assumed{why}; sizes may be off by 2.4 % per "
                     "prefix")


def _op(units: dict[str, str], row: dict[str, str], line: int, path: Path, base: int = 1024) -> tuple[Any, ...] | None:
    """One data row -> a tuple of _FIELDS values, or None for rows that are not GPU ops.

    ``base`` is the run's size base (``size_base``): 1024 or 1000 bytes per KB.
    """
    tscale = TIME_UNITS[units.get("Start", "s")]
    dscale = TIME_UNITS.get(units.get("Duration", "s"), tscale)
    start = _number(row.get("Start"), tscale, path, "Start", line)
    end = start + _number(row.get("Duration"), dscale, path, "Duration", line)
    nbytes = _number(row.get("Size"), _size_scale(units, "Size", base, path), path, "Size", line)
    dev = _DEVICE.match(row.get("Device", "") or "")
    device = int(dev.group(2)) if dev else 0
    stream = _id(row.get("Stream"), path, "Stream", line)
    name = (row.get("Name") or "").strip()
    corr = _id(row.get("Correlation_ID"), path, "Correlation_ID", line)
    src = _common.mem_kind_from_label(row.get("SrcMemType"))
    dst = _common.mem_kind_from_label(row.get("DstMemType"))
    copy = CopyKind.NONE
    grid = (0,) * 6
    occupancy = (NOT_RECORDED,) * len(_OCCUPANCY)
    if name.startswith("["):
        copy_match = _COPY.match(name)
        if copy_match:
            kind = OpKind.MEMCPY
            token = copy_match.group(1).upper()
            copy, src_array, dst_array = _common.DIRECTION_TOKENS.get(token, (CopyKind.UNKNOWN, False, False))
            if name.startswith("[Unified Memory"):
                copy = _UVM.get(copy, copy)
                src = MemKind.MANAGED if src == MemKind.UNKNOWN else src
                dst = MemKind.MANAGED if dst == MemKind.UNKNOWN else dst
            src = MemKind.ARRAY if src_array else src
            dst = MemKind.ARRAY if dst_array else dst
        elif name == "[CUDA memset]":
            kind = OpKind.MEMSET
            # The memory set is printed as SrcMemType (DstMemType is empty).
            dst, src = (src if dst == MemKind.UNKNOWN else dst), MemKind.UNKNOWN
        else:
            return None
        name_out = None
    else:
        kind = OpKind.KERNEL
        m = _CORRELATION_SUFFIX.match(name)
        if m:
            name = m.group(1)
            corr = corr if corr >= 0 else int(m.group(2))
        name_out = name
        grid = tuple(_number(row.get(c), 1, path, c, line) for c in _GRID)
        occupancy = tuple(_occupancy(row.get(col), _size_scale(units, col, base, path) if sized else 1, path, col, line,
                                     _OCCUPANCY_LIMIT[dst]) for col, dst, sized in _OCCUPANCY)
    src_device, dst_device = _device_of(row.get("Src Dev")), _device_of(row.get("Dst Dev"))
    return (kind, copy, src, dst, nbytes, start, end, device, src_device, dst_device, stream, corr, *grid,
            *occupancy, name_out)


#: Largest value each occupancy column holds (its Trace dtype).
_OCCUPANCY_LIMIT = {"registers_per_thread": (1 << 15) - 1, "static_smem_bytes": (1 << 31) - 1,
                    "dynamic_smem_bytes": (1 << 31) - 1}


def _occupancy(text: str | None, scale: int, path: Path, what: str, line: int, limit: int) -> int:
    """A kernel's registers or shared-memory bytes; ``NOT_RECORDED`` when the column is absent or empty.

    A negative or fractional value (after scaling to bytes) is an InputError
    naming the column and the line: no nvprof writes one.
    """
    if text is None or not text.strip():
        return NOT_RECORDED
    value = as_float(text.replace(",", ""), path=path, field=what, row=f"line {line}", ge=0, le=limit / scale,
                     hint=_DAMAGED)
    out = value * scale
    if abs(out - round(out)) > 1e-6 * max(1.0, out):
        raise InputError(f"{what} is {text.strip()} {'' if scale == 1 else 'units '}at line {line}: not a whole number"
                         f"{'' if scale == 1 else ' of bytes'}", path=path, key=what, hint=_DAMAGED)
    return round(out)


def _device_of(text: str | None) -> int:
    """``"Tesla K40c (0)"`` -> 0; -1 when absent (peer-copy columns are empty for other rows)."""
    m = _DEVICE.match(text or "")
    return int(m.group(2)) if m else -1


#: Index of the Start field in an ``_op`` tuple.
_START = _FIELDS.index("start_ns")


def _run_of(blocks: list, ops: list[tuple[Any, ...] | None]) -> tuple[list[int], int]:
    """The run of every data row of ``blocks`` (file order, as ``ops``): a new run at each header block, and at a
    row (a GPU op) that starts before the op above it in its block (module docstring); and how many runs began
    that second way."""
    run_of: list[int] = []
    run, i, restarts = -1, 0, 0
    for _, _, body in blocks:
        run += 1
        previous: int | None = None
        for _ in body:
            op = ops[i]
            i += 1
            if op is not None:
                if previous is not None and op[_START] < previous:
                    run += 1
                    restarts += 1
                previous = op[_START]
            run_of.append(run)
    return run_of, restarts


def _join_runs(cols: dict[str, np.ndarray], runs: np.ndarray, restarts: int) -> str | None:
    """Shift every run but the first to start where the previous one ended (module docstring); the note saying
    so, None for a single run. ``restarts``: how many runs began where start times go back (``_run_of``)."""
    ids = np.unique(runs)
    if len(ids) < 2:
        return None
    start, end = cols["start_ns"], cols["end_ns"]
    first = runs == ids[0]
    origin, previous_end = int(start[first].min()), int(end[first].max())
    first_span = previous_end - origin
    for run in ids[1:]:
        rows = runs == run
        shift = previous_end - int(start[rows].min())
        start[rows] += shift
        end[rows] += shift
        previous_end = int(end[rows].max())
    how = plural(len(ids) - restarts, "header block")  # those with GPU ops
    if restarts:
        how += f"; start times go back {plural(restarts, 'time')} within a block"
    text = (f"{len(ids)} runs concatenated ({how}), each timed from its own start: joined back to back, each run "
            "starting where the previous one ended, so end to end is the sum of the runs' spans (first GPU op start "
            "to last GPU op end of each) and leaves out the time between runs, which no clock in the file measured")
    note = nn.Note(text, nn.RUNS_JOINED, origin="trace")
    total = previous_end - origin
    if total <= 0:
        return note
    fraction = (total - first_span) / total
    return nn.weighed(note, fraction, f"runs 2 to {len(ids)}: {nn.percent(fraction)} of the joined end to end")
