"""Helpers shared by the trace readers: column buffers, interning, the API-time join.

Readers fill one preallocated buffer per Trace column (``allocate``), so that a
large trace is never held twice; ``finish`` sorts the rows in GPU order one
column at a time and wraps the buffers in a Trace without copying them.
Timestamps are integer nanoseconds throughout.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from nodecast import out_of_memory
from nodecast.errors import InputError
from nodecast.traces.collectives import from_names
from nodecast.traces.kinds import CopyKind, MemKind, OpKind
from nodecast.traces.op_classes import Algorithm, DType, OpClass, Protocol
from nodecast.traces.trace import (
    _DEFAULTS,
    COLUMNS,
    NOT_RECORDED,
    SHAPE_COLUMNS,
    WORK_COLUMNS,
    Trace,
    TraceMeta,
    default_column,
    is_constant,
)

# Reusing trace.py's defaults keeps one definition of "absent" per column.
_FILL = {name: _DEFAULTS.get(name, 0) for name in COLUMNS}


def allocate(n: int) -> dict[str, np.ndarray]:
    """One buffer per Trace column, ``n`` rows, holding each column's default."""
    out_of_memory.note_gpu_ops(n)  # every reader allocates here first: the size an out-of-memory line gives
    # What an op computes (WORK_COLUMNS) most readers do not fill: one shared read-only value, no memory per op
    # (a reader that fills one, the op-table and Kineto readers, assigns a new array).
    return {name: default_column(name, n) if name in WORK_COLUMNS else np.full(n, _FILL[name], dtype=dtype)
            for name, dtype in COLUMNS.items()}


def finish(cols: dict[str, np.ndarray], names: list[str], meta: TraceMeta) -> Trace:
    """Attach what NCCL/RCCL kernel names say (``collectives.from_names``: every reader's kernels, where the
    reader found nothing more specific), check the values (``check_ops``), sort the buffers by (device,
    start_ns) in place, column by column, and build the Trace.

    Permuting one column at a time keeps the extra memory to one column plus
    the order, where ``Trace.from_columns`` would copy every column at once.
    """
    from_names(cols, names, meta.notes)
    check_ops(cols, meta.source)
    n = len(cols["kind"])
    if n > 1:
        order = np.lexsort((cols["start_ns"], cols["device"]))
        if np.any(order[1:] < order[:-1]):
            for name in cols:
                if not is_constant(cols[name]):  # one shared value needs no sorting
                    cols[name] = cols[name][order]
        del order
    return Trace.from_columns(cols, names, meta, sort=False)


#: Most bytes one op may move: 2^50 B (1 PiB), far beyond any GPU's memory.
MAX_OP_BYTES = 1 << 50


def check_ops(cols: dict[str, np.ndarray], path: str | None) -> None:
    """InputError naming how many ops (and of which kinds) end before they start, move a
    negative number of bytes or more than ``MAX_OP_BYTES`` (1 PiB).

    No profiler writes any of them; they come from a damaged or edited file,
    and a negative time or size would flow silently into every table and model
    (``transfer time -600 us``), a huge one (INT64_MAX B) into hours-long
    copies. Three vectorized passes over the columns.
    """
    n = len(cols["kind"])
    checks = (
        (cols["end_ns"] < cols["start_ns"], "end before they start", "duration"),
        (cols["bytes"] < 0, "have a negative byte count", "bytes"),
        (cols["bytes"] > MAX_OP_BYTES, "move more than 2^50 B (1 PiB)", "bytes"),
    )
    for bad, what, shown in checks:
        count = int(np.count_nonzero(bad))
        if not count:
            continue
        per_kind = np.bincount(cols["kind"][bad].astype(np.intp), minlength=len(OpKind))
        kinds = ", ".join(f"{c:,} {OpKind(k).name.lower()}" for k, c in enumerate(per_kind) if c)
        i = int(np.argmax(bad))
        value = (
            f"{int(cols['end_ns'][i]) - int(cols['start_ns'][i])} ns" if shown == "duration"
            else f"{int(cols['bytes'][i])} B"
        )
        first = f"{OpKind(int(cols['kind'][i])).name.lower()} starting at {int(cols['start_ns'][i])} ns, {shown} {value}"
        raise InputError(
            f"{count:,} of {n:,} GPU ops {what} ({kinds}; first: {first})",
            path=path or None,
            hint="The file is damaged or was edited; export or record the trace again",
        )
    _check_work(cols, path)


def _check_work(cols: dict[str, np.ndarray], path: str | None) -> None:
    """InputError naming the first WORK_COLUMNS value no reader writes: a negative or infinite ``flops`` or
    ``work_bytes`` (NaN is "unknown"), a shape or group size below -1 ("not recorded"), a code that names no
    OpClass or DType. A column holding one shared default is checked once, not per op."""
    n = len(cols["kind"])
    checks = [(name, lambda v: ~np.isnan(v) & ((v < 0) | np.isinf(v)), "a negative or infinite value")
              for name in ("flops", "work_bytes")]
    checks += [(name, lambda v: v < NOT_RECORDED, f"a value below {NOT_RECORDED} (not recorded)")
               for name in (*SHAPE_COLUMNS, "gpus")]
    checks += [(name, lambda v, top=len(enum): (v < 0) | (v >= top), f"a code outside 0..{len(enum) - 1} "
                f"({enum.__name__})") for name, enum in (("op_class", OpClass), ("dtype", DType),
                                                         ("algorithm", Algorithm), ("protocol", Protocol))]
    for name, test, what in checks:
        column = cols.get(name)
        if column is None or not n:
            continue
        bad = test(column[:1] if is_constant(column) else column)
        count = int(np.count_nonzero(bad)) * (n if is_constant(column) else 1)
        if count:
            i = int(np.argmax(bad))
            raise InputError(
                f"{count:,} of {n:,} GPU ops have {what} in {name!r} (first: {column[i].item()!r} at start "
                f"{int(cols['start_ns'][i])} ns)",
                path=path or None,
                hint="The file is damaged or was edited; export or record the trace again",
            )


#: CUPTI kernel-record column (nsys and nvprof SQLite) -> Trace occupancy column.
OCCUPANCY_SOURCES = {
    "registersPerThread": "registers_per_thread",
    "staticSharedMemory": "static_smem_bytes",
    "dynamicSharedMemory": "dynamic_smem_bytes",
    "localMemoryPerThread": "local_mem_per_thread_bytes",
}


def occupancy_sql(db, table: str, cols: dict[str, np.ndarray], rows: slice) -> list[tuple[str, int, np.ndarray]]:  # noqa: ANN001
    """(SQL, default, buffer) triples reading the occupancy columns of a CUPTI kernel table.

    A column the schema lacks, or a NULL, reads ``NOT_RECORDED``; a negative
    value (no profiler writes one) also reads ``NOT_RECORDED`` rather than a
    size of -5 bytes. ``db`` is a ``nodecast.traces._sqlite.SqliteExport``.
    """
    out = []
    for src, dst in OCCUPANCY_SOURCES.items():
        expr = f'CASE WHEN "{src}" >= 0 THEN "{src}" ELSE {NOT_RECORDED} END' if src in db.columns(table) \
            else str(NOT_RECORDED)
        out.append((expr, NOT_RECORDED, cols[dst][rows]))
    return out


def intern_ids(ids: np.ndarray, lookup: dict[int, str]) -> tuple[np.ndarray, list[str]]:
    """Map string-table ids to dense ``name_id`` values; ids < 0 or unknown become -1.

    Returns the int32 ``name_id`` array and the names it indexes (only the
    strings actually used, in id order). Linear time when ids are dense, as
    they are in nsys and nvprof string tables.
    """
    out = np.full(ids.shape, -1, dtype=np.int32)
    valid = ids >= 0
    if not valid.any():
        return out, []
    top = int(ids.max())
    dense = top <= 4 * len(ids) + (1 << 20)
    if dense:
        used = np.zeros(top + 1, dtype=bool)
        used[ids[valid]] = True
        uniq = np.flatnonzero(used)
    else:  # sparse ids: sort instead of a table the size of the largest id
        uniq = np.unique(ids[valid])
    uniq = uniq[np.fromiter((int(i) in lookup for i in uniq), dtype=bool, count=len(uniq))]
    if len(uniq) == 0:
        return out, []
    names = [lookup[int(i)] for i in uniq]
    if dense:
        table = np.full(top + 2, -1, dtype=np.int32)  # last entry: what id -1 reads
        table[uniq] = np.arange(len(uniq), dtype=np.int32)
        out[:] = table[np.where(valid, ids, -1)]
    else:
        pos = np.searchsorted(uniq, ids)
        np.minimum(pos, len(uniq) - 1, out=pos)
        hit = valid & (uniq[pos] == ids)
        out[hit] = pos[hit]
    return out, names


def intern_strings(values: Sequence[str | None]) -> tuple[np.ndarray, list[str]]:
    """Intern a sequence of names (None: no name) into int32 ids and a name list."""
    index: dict[str, int] = {}
    ids = np.fromiter(
        (-1 if v is None else index.setdefault(v, len(index)) for v in values),
        dtype=np.int32,
        count=len(values),
    )
    return ids, list(index)


_JOIN_CHUNK = 1 << 20


def join_api_times(
    correlation: np.ndarray,
    api_correlation: np.ndarray,
    api_start: np.ndarray,
    api_end: np.ndarray,
    out_start: np.ndarray,
    out_end: np.ndarray,
) -> int:
    """Fill the CPU API start/end of every op from the API call with the same correlation id.

    ``out_start``/``out_end`` are written where a match exists and left as
    they are elsewhere; ids <= 0 never match (profilers use 0 for "none").
    When several API records share an id the first one wins, so callers list
    runtime calls before driver calls. Returns the number of ops matched.
    """
    if len(api_correlation) == 0 or len(correlation) == 0:
        return 0
    # API records are usually already in correlation order: skip the sort (and its two arrays).
    if np.all(api_correlation[1:] >= api_correlation[:-1]):
        order, keys = None, api_correlation
    else:
        order = np.argsort(api_correlation, kind="stable")
        keys = api_correlation[order]
    matched = 0
    # In chunks of ops, so the temporaries stay small next to the Trace buffers.
    for lo in range(0, len(correlation), _JOIN_CHUNK):
        corr = correlation[lo : lo + _JOIN_CHUNK]
        pos = np.searchsorted(keys, corr)
        np.minimum(pos, len(keys) - 1, out=pos)
        hit = keys[pos] == corr
        hit &= corr > 0
        src = pos[hit] if order is None else order[pos[hit]]
        out_start[lo : lo + _JOIN_CHUNK][hit] = api_start[src]
        out_end[lo : lo + _JOIN_CHUNK][hit] = api_end[src]
        matched += int(np.count_nonzero(hit))
    return matched


# -- copy directions and memory kinds named in text (Kineto, nvprof CSV) -------------------

#: Direction token as CUPTI prints it (``HtoD``) -> (CopyKind, array on source, array on destination).
DIRECTION_TOKENS: dict[str, tuple[CopyKind, bool, bool]] = {
    "HTOD": (CopyKind.HTOD, False, False),
    "DTOH": (CopyKind.DTOH, False, False),
    "DTOD": (CopyKind.DTOD, False, False),
    "HTOH": (CopyKind.HTOH, False, False),
    "PTOP": (CopyKind.PEER, False, False),
    "HTOA": (CopyKind.HTOD, False, True),
    "ATOH": (CopyKind.DTOH, True, False),
    "ATOA": (CopyKind.DTOD, True, True),
    "ATOD": (CopyKind.DTOD, True, False),
    "DTOA": (CopyKind.DTOD, False, True),
}

_MEM_LABELS = {k.name.replace("_", " "): k for k in MemKind}


def mem_kind_from_label(label: str | None) -> MemKind:
    """``"Pageable"``, ``"Device Static"``... -> MemKind; anything else is UNKNOWN."""
    if not label:
        return MemKind.UNKNOWN
    return _MEM_LABELS.get(label.strip().upper().replace("_", " "), MemKind.UNKNOWN)


_MEMCPY_NAME = re.compile(r"^Memcpy\s+(\w+)(?:\s*\((.*?)\s*->\s*(.*?)\))?\s*$", re.IGNORECASE)


def parse_memcpy_name(name: str) -> tuple[CopyKind, MemKind, MemKind]:
    """Direction and memory kinds of a copy named like ``Memcpy HtoD (Pageable -> Device)``.

    Unknown directions give ``CopyKind.UNKNOWN``; array sides keep ``MemKind.ARRAY``.
    """
    m = _MEMCPY_NAME.match(name)
    if not m:
        return CopyKind.UNKNOWN, MemKind.UNKNOWN, MemKind.UNKNOWN
    copy, src_array, dst_array = DIRECTION_TOKENS.get(m.group(1).upper(), (CopyKind.UNKNOWN, False, False))
    src = MemKind.ARRAY if src_array else mem_kind_from_label(m.group(2))
    dst = MemKind.ARRAY if dst_array else mem_kind_from_label(m.group(3))
    return copy, src, dst


# -- copy directions and memory kinds given as numbers (nsys, nvprof) ----------------------

#: CUPTI ``CUpti_ActivityMemcpyKind`` numbering, used by nvprof; nsys numbers 0-10 the
#: same way and adds 11-13 for unified-memory migrations (FORMATS.md C.3, C.4).
CUPTI_COPY_KIND_NAMES: dict[int, str] = {
    0: "UNKNOWN",
    1: "HTOD",
    2: "DTOH",
    3: "HTOA",
    4: "ATOH",
    5: "ATOA",
    6: "ATOD",
    7: "DTOA",
    8: "DTOD",
    9: "HTOH",
    10: "PTOP",
}

_UVM_KINDS = {
    "UVM_HTOD": CopyKind.UVM_HTOD,
    "UVM_DTOH": CopyKind.UVM_DTOH,
    "UVM_DTOD": CopyKind.UVM_DTOD,
}


def _lut_index(raw: np.ndarray, size: int) -> np.ndarray:
    """Index into a lookup table of ``size`` entries whose last entry means "unknown".

    Clipping to [-1, size - 1] sends every out-of-range number to the last
    entry (index -1 is the last entry too) in one pass.
    """
    return np.clip(raw, -1, size - 1)


def map_copies(
    raw_copy: np.ndarray,
    raw_src: np.ndarray,
    raw_dst: np.ndarray,
    copy_names: dict[int, str],
    mem_names: dict[int, str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode a profiler's copy-kind and memory-kind numbers into (CopyKind, src MemKind, dst MemKind).

    ``copy_names`` maps the file's copy-kind numbers to CUPTI names (``HTOD``,
    ``ATOH``, ``UVM_HTOD``...), ``mem_names`` its memory-kind numbers to
    MemKind names (``PAGEABLE``...). Array copies fold into HTOD/DTOH/DTOD with
    ``MemKind.ARRAY`` on the array side; unified-memory migrations get
    ``MemKind.MANAGED`` where the file leaves the memory kind unknown.
    Numbers the tables do not know decode as UNKNOWN.
    """
    size = max(copy_names, default=0) + 2
    copy_lut = np.full(size, CopyKind.UNKNOWN, dtype=np.int8)
    src_array = np.zeros(size, dtype=bool)
    dst_array = np.zeros(size, dtype=bool)
    for raw, name in copy_names.items():
        if raw < 0:
            continue
        if name in _UVM_KINDS:
            copy_lut[raw] = _UVM_KINDS[name]
        elif name in DIRECTION_TOKENS:
            copy_lut[raw], src_array[raw], dst_array[raw] = DIRECTION_TOKENS[name]
    msize = max(mem_names, default=0) + 2
    mem_lut = np.full(msize, MemKind.UNKNOWN, dtype=np.int8)
    for raw, name in mem_names.items():
        if raw >= 0 and name in MemKind.__members__:
            mem_lut[raw] = MemKind[name]

    ci = _lut_index(raw_copy, size)
    copy = copy_lut[ci]
    src = mem_lut[_lut_index(raw_src, msize)]
    dst = mem_lut[_lut_index(raw_dst, msize)]
    src[src_array[ci]] = MemKind.ARRAY
    dst[dst_array[ci]] = MemKind.ARRAY
    uvm = (copy >= CopyKind.UVM_HTOD) & (copy <= CopyKind.UVM_DTOD)
    if uvm.any():
        src[uvm & (src == MemKind.UNKNOWN)] = MemKind.MANAGED
        dst[uvm & (dst == MemKind.UNKNOWN)] = MemKind.MANAGED
    return copy, src, dst


def mem_kinds(raw: np.ndarray, mem_names: dict[int, str]) -> np.ndarray:
    """Decode memory-kind numbers (memset targets) into MemKind (int8)."""
    _, kinds, _ = map_copies(np.zeros_like(raw), raw, raw, {}, mem_names)
    return kinds
