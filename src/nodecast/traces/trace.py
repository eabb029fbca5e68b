"""The Trace vocabulary: one columnar table of GPU operations, whatever the profiler.

Columns are numpy arrays of fixed dtypes (``COLUMNS``); one row per GPU
operation (kernel, memcpy, memset, synchronization). Timestamps are integer
nanoseconds as the profiler wrote them; ``MISSING_NS`` marks a timestamp the
trace does not have (CPU API times in a Kineto trace without flows, say).
Kernel names are interned: ``name_id`` indexes ``Trace.names`` (-1: no name).
A kernel's launch configuration (grid and block in blocks and threads) and its
occupancy inputs (``OCCUPANCY_COLUMNS``: registers per thread, static and
dynamic shared memory per block in bytes, local memory per thread in bytes)
are kept where the profiler records them; ``NOT_RECORDED`` (-1) marks an occupancy
value the trace does not have (every non-kernel row, Kineto on ROCm...).

What an op computes is kept where the input says it (``WORK_COLUMNS``; op
tables, ``nodecast.traces.op_table``, record it per row): its op class and
data type (``nodecast.traces.op_classes``: ``OpClass``, ``DType``; int8 codes,
0: not recorded), its arithmetic ``flops`` (FLOP; a GEMM 2·m·n·k; NaN:
unknown), ``work_bytes`` (the least bytes it must read and write in DRAM, from
its shapes: a GEMM (m·k + k·n + m·n) x the element size; NaN: unknown), its
shape ``batch``, ``m``, ``n``, ``k`` (GEMM C[m,n] = A[m,k] B[k,n]; an op over
a (B, H) tensor has m = B, n = H; -1: not recorded) and, for a collective,
the GPUs of its group (``gpus``; its message size is ``bytes``, nccl-tests'
size per rank) and the ``algorithm`` and ``protocol`` NCCL ran it with
(``Algorithm``, ``Protocol``; 0: not recorded; ``COLLECTIVE_COLUMNS``). A trace
whose reader does not fill these columns keeps one shared default value per
column (``default_column``): they take no memory per op. A trace with no
collective (``records_collectives``) leaves the two collective columns out of
its tables and files, which read exactly as before they existed.

Example (three ops)::

    kind   copy_kind src_mem dst_mem bytes   start_ns end_ns  device stream name_id
    KERNEL NONE      UNKNOWN UNKNOWN 0       1000     5000    0      7      0
    MEMCPY HTOD      PINNED  DEVICE  1048576 6000     9000    0      7      -1
    MEMSET NONE      UNKNOWN DEVICE  4096    9500     9600    0      7      -1
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nodecast.errors import InputError
from nodecast.machines.device_properties import GpuProperties
from nodecast.traces.kinds import TRACE_KINDS, CopyKind, MemKind, OpKind, TransferClass, classify_transfers
from nodecast.traces.op_classes import Algorithm, DType, OpClass, Protocol

#: A timestamp the trace does not record.
MISSING_NS = np.iinfo(np.int64).min

#: Column name -> dtype. Every Trace has exactly these columns, all of one length.
COLUMNS: dict[str, np.dtype[Any]] = {
    "kind": np.dtype(np.int8),  # OpKind
    "copy_kind": np.dtype(np.int8),  # CopyKind
    "src_mem": np.dtype(np.int8),  # MemKind of the source
    "dst_mem": np.dtype(np.int8),  # MemKind of the destination (memset: the memory set)
    "bytes": np.dtype(np.int64),  # bytes copied or set; 0 for kernels (a collective's: its message size)
    "start_ns": np.dtype(np.int64),  # GPU start
    "end_ns": np.dtype(np.int64),  # GPU end
    "api_start_ns": np.dtype(np.int64),  # CPU runtime/driver API call start (MISSING_NS if absent)
    "api_end_ns": np.dtype(np.int64),
    "device": np.dtype(np.int16),
    "src_device": np.dtype(np.int16),  # peer copies; else = device
    "dst_device": np.dtype(np.int16),
    "stream": np.dtype(np.int64),
    "correlation": np.dtype(np.int64),
    "name_id": np.dtype(np.int32),  # index into Trace.names, -1 for none
    "grid_x": np.dtype(np.int32),
    "grid_y": np.dtype(np.int32),
    "grid_z": np.dtype(np.int32),
    "block_x": np.dtype(np.int32),
    "block_y": np.dtype(np.int32),
    "block_z": np.dtype(np.int32),
    # Occupancy inputs of a kernel launch (NOT_RECORDED where the profiler does not record them; 0 is a value):
    "registers_per_thread": np.dtype(np.int16),  # 32-bit registers per thread (AMD: VGPRs)
    "static_smem_bytes": np.dtype(np.int32),  # static shared memory per block, bytes (Kineto: static + dynamic)
    "dynamic_smem_bytes": np.dtype(np.int32),  # dynamic shared memory per block, bytes
    "local_mem_per_thread_bytes": np.dtype(np.int32),  # local (spill) memory per thread, bytes
    # What the op computes (WORK_COLUMNS; op tables, nodecast.traces.op_table): defaults where nothing says.
    "op_class": np.dtype(np.int8),  # OpClass (gemm, softmax, all_reduce...); 0: not recorded
    "dtype": np.dtype(np.int8),  # DType the op computes in (fp32, bf16...); 0: not recorded
    "flops": np.dtype(np.float64),  # the op's arithmetic, FLOP (a GEMM: 2*m*n*k); NaN: unknown
    "work_bytes": np.dtype(np.float64),  # least DRAM bytes the op reads and writes, from its shapes; NaN: unknown
    "batch": np.dtype(np.int64),  # batch of independent problems (bmm, linear); -1: not recorded
    "m": np.dtype(np.int64),  # GEMM C[m,n] = A[m,k] B[k,n]; (B, H) ops: m = B rows; -1: not recorded
    "n": np.dtype(np.int64),  # GEMM n; (B, H) ops: n = H elements per row; -1: not recorded
    "k": np.dtype(np.int64),  # GEMM k (the reduced dimension); -1: not recorded
    "gpus": np.dtype(np.int16),  # GPUs in a collective's group (its message size is in "bytes"); -1: not recorded
    "algorithm": np.dtype(np.int8),  # Algorithm a collective ran with (ring, tree, nvls...); 0: not recorded
    "protocol": np.dtype(np.int8),  # Protocol a collective ran with (ll, ll128, simple); 0: not recorded
}

#: The value of an occupancy column the trace does not record (0 is a real value: no shared memory).
NOT_RECORDED = -1

#: The occupancy columns (per kernel launch; NOT_RECORDED elsewhere and where not recorded).
OCCUPANCY_COLUMNS = ("registers_per_thread", "static_smem_bytes", "dynamic_smem_bytes", "local_mem_per_thread_bytes")

_DEFAULTS = {
    "copy_kind": CopyKind.NONE,
    "src_mem": MemKind.UNKNOWN,
    "dst_mem": MemKind.UNKNOWN,
    "bytes": 0,
    "api_start_ns": MISSING_NS,
    "api_end_ns": MISSING_NS,
    "device": 0,
    "src_device": -1,
    "dst_device": -1,
    "stream": -1,
    "correlation": -1,
    "name_id": -1,
    "grid_x": 0,
    "grid_y": 0,
    "grid_z": 0,
    "block_x": 0,
    "block_y": 0,
    "block_z": 0,
    "registers_per_thread": NOT_RECORDED,
    "static_smem_bytes": NOT_RECORDED,
    "dynamic_smem_bytes": NOT_RECORDED,
    "local_mem_per_thread_bytes": NOT_RECORDED,
    "op_class": 0,
    "dtype": 0,
    "flops": np.nan,
    "work_bytes": np.nan,
    "batch": NOT_RECORDED,
    "m": NOT_RECORDED,
    "n": NOT_RECORDED,
    "k": NOT_RECORDED,
    "gpus": NOT_RECORDED,
    "algorithm": 0,
    "protocol": 0,
}

#: What an op computes: its op class, data type, arithmetic, bytes and shape, a collective's group, algorithm and
#: protocol (op tables and the PyTorch profiler record some; NCCL kernel names others). A column no reader filled
#: holds one shared default value (``default_column``).
WORK_COLUMNS = ("op_class", "dtype", "flops", "work_bytes", "batch", "m", "n", "k", "gpus", "algorithm", "protocol")
#: The columns only a collective fills: a trace without collectives leaves them out of its CSV and Parquet files
#: (``records_collectives``), so that those read byte for byte as before the columns existed.
COLLECTIVE_COLUMNS = ("algorithm", "protocol")
#: The shape columns of WORK_COLUMNS (NOT_RECORDED where the op has no such dimension or the trace does not say).
SHAPE_COLUMNS = ("batch", "m", "n", "k")


def default_column(name: str, n: int) -> np.ndarray:
    """Column ``name`` of ``n`` rows holding its default (``_DEFAULTS``).

    A WORK_COLUMNS default is a read-only view of one value (stride 0), so
    the 54 bytes per op of those columns cost nothing in a trace whose
    profiler does not record them (all but the PyTorch profiler): ``Trace.take``
    keeps such a column a view, and writing into it raises, as writing into
    any Trace column should not be done.
    """
    dtype = COLUMNS[name]
    if name in WORK_COLUMNS:
        return np.broadcast_to(np.array(_DEFAULTS[name], dtype=dtype), (n,))
    return np.full(n, _DEFAULTS[name], dtype=dtype)


def is_constant(column: np.ndarray) -> bool:
    """Whether ``column`` is one value viewed ``len`` times (``default_column``): nothing per op to copy."""
    return column.ndim == 1 and len(column) > 1 and column.strides[0] == 0


def records_collectives(columns: dict[str, np.ndarray] | Trace) -> bool:
    """Whether any op is a collective (``OpClass.collective``) or has an algorithm or protocol: then the trace's
    tables and files carry ``COLLECTIVE_COLUMNS``. A shared default column is looked at once, not per op."""
    def values(name: str) -> np.ndarray:
        column = columns[name]
        return column[:1] if is_constant(column) else column

    return bool((values("op_class") >= OpClass.ALL_REDUCE).any()) or any(
        bool(values(name).any()) for name in COLLECTIVE_COLUMNS)


@dataclass
class TraceMeta:
    """Where a trace came from: file, format, profiler version, GPU names per device."""

    source: str = ""
    format: str = ""
    profiler: str = ""
    gpus: dict[int, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: Device index -> what the trace records of that GPU besides its name (compute capability, SMs, memory), for
    #: GPUs whose name says nothing ("Graphics Device"); empty where the format records nothing.
    gpu_properties: dict[int, GpuProperties] = field(default_factory=dict)


def _is_sorted(device: np.ndarray, start_ns: np.ndarray) -> bool:
    """Whether rows are already in (device, start_ns) order: O(n), unlike the sort it spares."""
    step_dev = np.diff(device)
    if (step_dev < 0).any():
        return False
    return not ((np.diff(start_ns) < 0) & (step_dev == 0)).any()


class Trace:
    """A columnar table of GPU operations (see the module docstring).

    Build one with ``Trace.from_columns`` (missing columns get their defaults);
    rows are sorted by (device, start_ns) so that "order" means GPU order.
    """

    __slots__ = ("_cols", "_memo", "_transfer_class", "meta", "names")

    def __init__(self, columns: dict[str, np.ndarray], names: list[str], meta: TraceMeta) -> None:
        self._cols = columns
        self.names = names
        self.meta = meta
        self._transfer_class: np.ndarray | None = None
        self._memo: dict[object, object] = {}

    @classmethod
    def from_columns(
        cls,
        columns: dict[str, Any],
        names: list[str] | None = None,
        meta: TraceMeta | None = None,
        *,
        sort: bool = True,
    ) -> Trace:
        """Build a Trace, casting to ``COLUMNS`` dtypes and filling defaults.

        ``columns`` must hold at least ``kind``, ``start_ns`` and ``end_ns``.
        """
        unknown = set(columns) - set(COLUMNS)
        if unknown:
            msg = f"unknown trace columns: {sorted(unknown)}"
            raise ValueError(msg)
        for required in ("kind", "start_ns", "end_ns"):
            if required not in columns:
                msg = f"trace column {required!r} is required"
                raise ValueError(msg)
        n = len(columns["kind"])
        cols: dict[str, np.ndarray] = {}
        for name, dtype in COLUMNS.items():
            if name in columns:
                arr = np.asarray(columns[name])
                if arr.shape != (n,):
                    msg = f"trace column {name!r} has shape {arr.shape}, expected ({n},)"
                    raise ValueError(msg)
                cols[name] = arr.astype(dtype, copy=False)
            else:
                cols[name] = default_column(name, n)
        unset_src = cols["src_device"] < 0
        if unset_src.any():
            cols["src_device"] = np.where(unset_src, cols["device"], cols["src_device"])
        unset_dst = cols["dst_device"] < 0
        if unset_dst.any():
            cols["dst_device"] = np.where(unset_dst, cols["device"], cols["dst_device"])
        trace = cls(cols, list(names or []), meta or TraceMeta())
        if sort and n > 1 and not _is_sorted(cols["device"], cols["start_ns"]):
            trace = trace.take(np.lexsort((cols["start_ns"], cols["device"])))
        return trace

    # -- access ---------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._cols["kind"])

    def __getitem__(self, column: str) -> np.ndarray:
        return self._cols[column]

    @property
    def columns(self) -> dict[str, np.ndarray]:
        """The column arrays (do not modify in place)."""
        return self._cols

    @property
    def duration_ns(self) -> np.ndarray:
        """GPU duration of every op, ns (int64)."""
        return self._cols["end_ns"] - self._cols["start_ns"]

    @property
    def transfer_class(self) -> np.ndarray:
        """TransferClass (int8) of every op, computed once."""
        if self._transfer_class is None:
            c = self._cols
            self._transfer_class = classify_transfers(c["kind"], c["copy_kind"], c["src_mem"], c["dst_mem"])
        return self._transfer_class

    def memo(self, key: object, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per trace and key: whole-trace masks and statistics that several
        models need (the projector runs every model over the same trace). Callers must not
        modify the returned object in place."""
        try:
            return self._memo[key]
        except KeyError:
            value = self._memo[key] = compute()
            return value

    def mask(self, kind: OpKind) -> np.ndarray:
        """Boolean mask of ops of one kind."""
        return self._cols["kind"] == kind

    def kernel_names(self) -> np.ndarray:
        """Name of every op as an object array (None where there is none)."""
        lookup = np.array([*self.names, None], dtype=object)
        return lookup[self._cols["name_id"]]  # -1 indexes the trailing None

    def counts(self) -> dict[str, int]:
        """Number of ops per OpKind name."""
        values, counts = np.unique(self._cols["kind"], return_counts=True)
        return {OpKind(v).name.lower(): int(c) for v, c in zip(values, counts, strict=True)}

    # -- transforms -----------------------------------------------------------
    def take(self, index: np.ndarray) -> Trace:
        """A new Trace with the rows selected by a boolean mask or an index array."""
        kind = self._cols["kind"][index]
        # A constant column stays one value: indexing it would give every row its own copy.
        cols = {k: np.broadcast_to(v[:1], kind.shape) if is_constant(v) else kind if k == "kind" else v[index]
                for k, v in self._cols.items()}
        out = Trace(cols, self.names, self.meta)
        if self._transfer_class is not None:
            out._transfer_class = self._transfer_class[index]
        return out

    @classmethod
    def concat(cls, traces: list[Trace], meta: TraceMeta | None = None) -> Trace:
        """Join traces row-wise, re-interning kernel names; keeps each trace's order."""
        if not traces:
            msg = "nothing to concatenate"
            raise ValueError(msg)
        names: list[str] = []
        index: dict[str, int] = {}
        parts: dict[str, list[np.ndarray]] = {k: [] for k in COLUMNS}
        for t in traces:
            remap = np.array([index.setdefault(n, len(index)) for n in t.names] + [-1], dtype=np.int32)
            for k in COLUMNS:
                parts[k].append(remap[t["name_id"]] if k == "name_id" else t[k])
        names = list(index)
        cols = {k: _concat(v) for k, v in parts.items()}
        return cls(cols, names, meta or traces[0].meta)

    def to_pandas(self, *, decode: bool = True):  # noqa: ANN201 (pandas is imported lazily)
        """A pandas DataFrame of the trace; with ``decode`` enum columns become labels. ``COLLECTIVE_COLUMNS`` are
        left out of a trace without collectives (``records_collectives``): its table reads as it always has."""
        import pandas as pd

        collectives = records_collectives(self)
        df = pd.DataFrame({k: v for k, v in self._cols.items() if collectives or k not in COLLECTIVE_COLUMNS})
        if decode:
            df["kind"] = pd.Categorical.from_codes(df["kind"], [k.name.lower() for k in TRACE_KINDS])
            df["copy_kind"] = pd.Categorical.from_codes(df["copy_kind"], [k.name for k in CopyKind])
            df["src_mem"] = pd.Categorical.from_codes(df["src_mem"], [k.name.lower() for k in MemKind])
            df["dst_mem"] = pd.Categorical.from_codes(df["dst_mem"], [k.name.lower() for k in MemKind])
            df["transfer_class"] = pd.Categorical.from_codes(
                self.transfer_class, [k.key for k in TransferClass]
            )
            df.insert(len(df.columns), "name", self.kernel_names())
            for col in ("api_start_ns", "api_end_ns"):
                df[col] = df[col].astype("Int64").mask(df[col] == MISSING_NS)
            for col in OCCUPANCY_COLUMNS:
                df[col] = df[col].astype("Int64").mask(df[col] == NOT_RECORDED)
            # Codes become labels ("unknown" where nothing says); an unrecorded shape or group size is empty.
            df["op_class"] = pd.Categorical.from_codes(df["op_class"], [c.key for c in OpClass])
            df["dtype"] = pd.Categorical.from_codes(df["dtype"], [d.key for d in DType])
            for col in (*SHAPE_COLUMNS, "gpus"):
                df[col] = df[col].astype("Int64").mask(df[col] == NOT_RECORDED)
            if collectives:
                df["algorithm"] = pd.Categorical.from_codes(df["algorithm"], [a.key for a in Algorithm])
                df["protocol"] = pd.Categorical.from_codes(df["protocol"], [p.key for p in Protocol])
        return df

    def __repr__(self) -> str:
        counts = ", ".join(f"{k}={v}" for k, v in self.counts().items())
        return f"Trace({len(self)} ops: {counts}; source={self.meta.source!r})"


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    """``np.concatenate(parts)``, but one shared value when every non-empty part is that same constant."""
    full = [p for p in parts if len(p)]
    if full and all(is_constant(p) or len(p) == 1 for p in full):
        first = full[0][:1]
        if all(np.array_equal(p[:1], first, equal_nan=first.dtype.kind == "f") for p in full):
            return np.broadcast_to(first, (sum(len(p) for p in full),))
    return np.concatenate(parts)


def require_ops(trace: Trace, path: str | Path) -> Trace:
    """Raise InputError when a trace holds no GPU operation at all."""
    if len(trace) == 0:
        raise InputError(
            "the trace holds no GPU operation (no kernel, memcpy or memset rows)",
            path=path,
            hint="Profile with CUDA tracing on (nsys -t cuda, nvprof) and export again",
        )
    return trace
