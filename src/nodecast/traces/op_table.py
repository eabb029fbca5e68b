"""Op tables: per-op measurements (a microbenchmark sweep, a public corpus) read like a trace.

An op table is a CSV or Parquet file with one row per measured op. Columns
(names are case-insensitive; blanks around values are ignored; an empty
cell is "not recorded"):

================  ==========  ===============================================================  ========
column            unit        meaning                                                          required
================  ==========  ===============================================================  ========
``device``        text        the GPU's name as the driver reports it (``NVIDIA H100 80GB        yes
                              HBM3``, ``Tesla T4``): it picks the data sheet
``op``            text        gemm, bmm, linear, conv, elementwise, softmax, layernorm,         yes
                              reduction, attention, copy, all_reduce, all_gather,
                              reduce_scatter, all_to_all, send_recv, broadcast, reduce
                              (``OpClass``; other spellings in ``OP_ALIASES``: matmul, ln...)
``duration_s``    s           the op's measured time on the GPU                                  yes
``dtype``         text        fp64, fp32, tf32, bf16, fp16, fp8, fp8_block, nvfp4, fp4, int8,   no
                              int4 (``DType``; also float32, bfloat16, half...)
``batch``         count       independent problems of one op (bmm; linear: its batch)            no
``m, n, k``       elements    GEMM C[m,n] = A[m,k] B[k,n]; an op over a (B, H) tensor            no
                              (elementwise, softmax, layernorm, reduction): m = B rows, n = H
``flops``         FLOP        the op's arithmetic; default: from its shape (below)                no
``bytes``         B           copy: bytes copied; other ops: the least bytes the op reads and    no
                              writes in DRAM; default: from its shape (below)
``name``          text        the kernel's name; default: built from op, dtype and shape         no
                              (``gemm_bf16_m4096_n4096_k4096``)
``grid_x..z``     blocks      the launch grid                                                     no
``block_x..z``    threads     the block                                                           no
``registers``     count       32-bit registers per thread                                        no
``shared_bytes``  B           shared memory per block (static and dynamic)                       no
``gpus``          count       GPUs in a collective's group                                       no
``message_bytes`` B           a collective's message size (nccl-tests' size)                     no
================  ==========  ===============================================================  ========

Other columns are not read (the trace's notes name them). Each row becomes
one Trace row: a kernel (``OpKind.KERNEL``) with its ``op_class``,
``dtype`` and shape, a ``copy`` a device-to-device memcpy of ``bytes``, a
collective a kernel whose ``bytes`` is its message size. Rows with no
``batch`` but a shape have batch 1.

What the op computes where the table does not say (``with_work``; e: the
dtype's element size in bytes, b: batch; every operand in the op's dtype,
so an fp8 GEMM writing bf16 is counted at 1 byte per output element):

==================================  ===================  ====================================================
op                                  flops (FLOP)         bytes (B, least DRAM traffic)
==================================  ===================  ====================================================
gemm, bmm                           2·b·m·n·k            e·b·(m·k + k·n + m·n)
linear (b problems share B[k,n])    2·b·m·n·k            e·(b·m·k + k·n + b·m·n)
conv (m, n, k of its implicit GEMM) 2·b·m·n·k            not computed: the implicit GEMM reads each input
                                                         element once per filter tap; give ``bytes``
elementwise                         b·m·n (n absent: 1)  2·e·b·m·n (one tensor in, one out; a binary op
                                                         reads two: give ``bytes``)
softmax                             5·b·m·n              2·e·b·m·n
layernorm                           8·b·m·n              2·e·b·m·n (the 2·n weights left out)
reduction (each row of m to one)    b·m·n                e·b·(m·n + m)
attention (b = batch·heads, m       4·b·m·n·k            e·b·(2·m·k + 2·n·k) (Q, K, V, O)
queries, n keys, k head size)
copy                                0                    2·bytes (read once, written once)
collectives                         not computed         not computed
==================================  ===================  ====================================================

Decisions:

- A trace is one run on one node, and ``project``, ``forecast`` and
  ``evaluate`` pick one data sheet from its GPU name: an op table whose rows
  name several ``device`` values is refused (``read_op_table`` with
  ``device=`` picks one of them; ``write_op_tables`` writes one file per
  GPU). Its GPU is device 0 (``meta.gpus``).
- The ops are laid back to back on one stream in row order: the first
  starts at 0 and each starts where the previous ended. An op table records
  no overlap and no host time, so the trace's timeline (its end to end) is
  the sum of its durations, which the trace's notes say. Durations are
  rounded to whole nanoseconds.
- ``duration_s`` must be a finite number >= 0 and at most ``MAX_DURATION_S``;
  shapes, launch sizes and counts whole numbers >= 0 (batch and gpus >= 1);
  ``flops`` and ``bytes`` finite and >= 0; a collective's ``message_bytes`` a
  whole number of its dtype's elements (a size in elements or for another
  dtype would be read wrong). A value that is not (text in a
  number column, a negative or NaN time, an op or dtype nodecast does not
  know, a missing required column) is an InputError naming the file, the
  column and the row (rows count from 1 after the header), and what to do.

The shared corpora become op tables with ``from_neusight`` and
``from_aiconfigurator`` (DataFrames in this schema, latencies converted
from milliseconds), written with ``write_op_table``; docs/inputs.md, "Op
tables", shows how.

Reading and checking the cells is ``op_table_frame``'s (``MAX_DURATION_S``,
``SCHEMA``), what an op computes ``op_table_work``'s; ``READER`` makes op
tables one of the trace formats ``load_trace`` reads.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from nodecast.errors import InputError
from nodecast.fileio import atomic_path
from nodecast.traces import _common
from nodecast.traces.kinds import CopyKind, MemKind, OpKind
from nodecast.traces.op_classes import DType, OpClass, dtype_of
from nodecast.traces.op_table_frame import SEE, check_frame, read_frame
from nodecast.traces.op_table_work import batch_sizes, codes, default_names, number_column, with_work, work
from nodecast.traces.parquet import METADATA_KEY
from nodecast.traces.reader import PARQUET, TEXT, Probe, Reader, without_api
from nodecast.traces.trace import NOT_RECORDED, Trace, TraceMeta
from nodecast.values import where

FORMAT = "op-table"

#: Names kept here for the modules that import them from here (the frame and the work live in ``op_table_frame``
#: and ``op_table_work``).
__all__ = ["FORMAT", "READER", "check_frame", "default_names", "from_aiconfigurator", "from_neusight",
           "is_op_table_header", "looks_like_op_table_csv", "read_frame", "read_op_table", "to_trace", "with_work",
           "work", "write_op_table", "write_op_tables"]

#: Columns of the shared corpora's raw files (../shared/data/cross-gpu), which ``from_neusight`` and
#: ``from_aiconfigurator`` make op tables of.
_CORPORA = {"neusight": ({"OPName", "Latency", "Device"}, "from_neusight"),
            "aiconfigurator": ({"latency", "device", "system"}, "from_aiconfigurator")}


# -- detection -------------------------------------------------------------------------------------------------

def is_op_table_header(columns: list[str] | tuple[str, ...]) -> bool:
    """Whether column names (any case) look like an op table's: ``op`` and ``device`` or ``duration_s``.

    One required column may be missing, so that the reader, not "not a trace
    format", says which.
    """
    names = {str(c).strip().lower() for c in columns}
    return "op" in names and bool(names & {"device", "duration_s"})


def looks_like_op_table_csv(text: str) -> bool:
    """Whether the start of a text file is an op table's CSV header (its first non-blank line)."""
    import csv  # noqa: PLC0415 (only detection needs it)

    for line in text.lstrip("\ufeff").splitlines():
        if line.strip():
            try:
                header = next(csv.reader([line]))
            except csv.Error:
                return False
            return is_op_table_header(header)
    return False


def _claims(probe: Probe) -> bool:
    """Whether a file is an op table: a CSV whose header names ``op`` and ``device`` or ``duration_s``, or a
    Parquet file with such columns that nodecast did not write (a damaged one is left to the Parquet trace
    reader, which says so). A raw NeuSight or AIConfigurator file (one table of many GPUs, latencies in
    milliseconds) is an InputError saying how to make op tables of it."""
    if probe.container == TEXT:
        return looks_like_op_table_csv(probe.text)
    schema = probe.parquet_schema if probe.container == PARQUET else None
    if schema is None or METADATA_KEY in (schema.metadata or {}):
        return False
    if is_op_table_header(schema.names):
        return True
    for corpus, (columns, function) in _CORPORA.items():
        if columns <= set(schema.names):
            raise InputError(
                f"a raw {corpus} measurement file (latencies in milliseconds, several GPUs per file), not a trace "
                "or an op table",
                path=probe.path,
                hint=f"Write one op table per GPU with nodecast.traces.op_table.{function} and write_op_tables "
                     "(docs/inputs.md, Op tables)",
            )
    return False


# -- reading ---------------------------------------------------------------------------------------------------

def read_op_table(path: str | Path, device: str | None = None) -> Trace:
    """Read an op table (CSV or Parquet) into a Trace (see the module docstring).

    ``device``: keep only the rows of this GPU name (a table of several GPUs
    is otherwise refused). Raises InputError on anything the table gets wrong.
    """
    path = Path(path)
    return to_trace(read_frame(path), str(path), device)


#: The format's reader (``traces.formats``); an op table records no host calls (its ops run back to back).
READER = Reader(FORMAT, _claims, read_op_table, without_api(FORMAT, "an op table"))


# -- the Trace ---------------------------------------------------------------------------------------------------

def to_trace(frame: pd.DataFrame, source: str = "", device: str | None = None) -> Trace:
    """A Trace of a checked op-table frame (``read_frame``; see the module docstring). ``device``: keep only
    that GPU's rows; without it a frame of several GPUs is an InputError. ``source`` names the file."""
    path = source or None
    devices = pd.Series(frame["device"]).value_counts(sort=False)
    if device is not None:
        if device not in devices.index:
            raise InputError(f"no row of GPU {device!r} (the table has {_listed(devices)})", path=path,
                             key="device", hint="Name one of the table's GPUs")
        frame = frame[(frame["device"] == device).to_numpy()].reset_index(drop=True)
    elif len(devices) > 1:
        raise InputError(f"the op table holds the measurements of {len(devices)} GPUs ({_listed(devices)}); a trace "
                         "is one run on one GPU model", path=path, key="device",
                         hint="Write one op table per GPU (nodecast.traces.op_table.write_op_tables), or read one "
                              "GPU's rows with read_op_table(path, device=NAME); " + SEE)
    n = len(frame)
    op, dtype = codes(frame)
    flops, traffic = work(frame)
    total = float(frame["duration_s"].sum())
    if total * 1e9 >= 2.0**62:
        raise InputError(f"the op table's durations add up to {total:.6g} s, more than nodecast's timeline holds "
                         f"({2.0**62 * 1e-9:.3g} s)", path=path, key="duration_s",
                         hint="Check that duration_s is in seconds; " + SEE)
    duration = np.rint(frame["duration_s"].to_numpy(dtype=np.float64) * 1e9).astype(np.int64)
    end = np.cumsum(duration)
    copy = op == OpClass.COPY
    size = number_column(frame, "bytes")
    if copy.any() and np.isnan(size[copy]).any():
        row = int(np.flatnonzero(copy)[np.argmax(np.isnan(size[copy]))]) + 1
        raise InputError("a copy row has no bytes", path=path, key=where("bytes", row),
                         hint="Give the bytes each copy moves")
    message = number_column(frame, "message_bytes")
    collective = op >= OpClass.ALL_REDUCE
    nbytes = np.where(copy, size, np.where(collective & ~np.isnan(message), message, 0.0))
    names = np.array(frame["name"].to_numpy(dtype=object) if "name" in frame.columns else [""] * n, dtype=object)
    unnamed = names == ""
    if unnamed.any():
        names[unnamed] = np.array(default_names(frame[unnamed]), dtype=object)
    names[copy] = None  # a memcpy has no kernel name in any trace
    name_id, interned = _common.intern_strings(names.tolist())
    cols: dict[str, np.ndarray] = {
        "kind": np.where(copy, OpKind.MEMCPY, OpKind.KERNEL).astype(np.int8),
        "copy_kind": np.where(copy, CopyKind.DTOD, CopyKind.NONE).astype(np.int8),
        "src_mem": np.where(copy, MemKind.DEVICE, MemKind.UNKNOWN).astype(np.int8),
        "dst_mem": np.where(copy, MemKind.DEVICE, MemKind.UNKNOWN).astype(np.int8),
        "bytes": nbytes.astype(np.int64),
        "start_ns": end - duration,
        "end_ns": end,
        "device": np.zeros(n, np.int16),
        "stream": np.zeros(n, np.int64),
        "name_id": name_id,
        "op_class": op,
        "dtype": dtype,
        "flops": flops,
        "work_bytes": traffic,
        "batch": _ints(batch_sizes(frame)),
        "m": _ints(number_column(frame, "m")),
        "n": _ints(number_column(frame, "n")),
        "k": _ints(number_column(frame, "k")),
        "gpus": _ints(number_column(frame, "gpus")),
    }
    for column in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"):
        if column in frame.columns:
            cols[column] = np.nan_to_num(number_column(frame, column), nan=0.0).astype(np.int64)
    for ours, theirs in (("registers", "registers_per_thread"), ("shared_bytes", "static_smem_bytes")):
        if ours in frame.columns:
            cols[theirs] = _ints(number_column(frame, ours))
    notes = [f"an op table: its {n:,} ops are laid back to back on one stream in row order, so its timeline is "
             f"the sum of their measured times ({total:.6g} s), with no overlap and no host time"]
    ignored = frame.attrs.get("ignored") or []
    if ignored:
        notes.append(f"op-table columns not read: {', '.join(ignored[:10])}"
                     + (f" and {len(ignored) - 10} more" if len(ignored) > 10 else ""))
    meta = TraceMeta(source=source, format=FORMAT, profiler="op table", gpus={0: str(frame["device"].iloc[0])},
                     notes=notes)
    _common.check_ops(cols, source)
    return Trace.from_columns(cols, interned, meta, sort=False)


def _ints(values: np.ndarray) -> np.ndarray:
    """Float values (NaN: not recorded) as int64 with NOT_RECORDED for NaN."""
    return np.where(np.isnan(values), NOT_RECORDED, values).astype(np.int64)


def _listed(counts: pd.Series) -> str:
    """``"Tesla T4: 200 rows, Tesla V100-PCIE-32GB: 200 rows"`` (at most 5 GPUs named)."""
    parts = [f"{name}: {count:,} rows" for name, count in counts.items()]
    return ", ".join(parts[:5]) + (f" and {len(parts) - 5} more" if len(parts) > 5 else "")


# -- writing -----------------------------------------------------------------------------------------------------

def write_op_table(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write an op-table frame (``from_neusight``, ``from_aiconfigurator``, your own) as CSV or Parquet (by the
    extension), atomically, with its ``SCHEMA`` columns in order; checked first (``check_frame``), so that what
    is written reads back."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise InputError(f"unsupported op-table extension {path.suffix or '(none)'!r}", path=path,
                         hint="Name the op table .csv or .parquet")
    checked = check_frame(frame, path)
    with atomic_path(path) as tmp:
        if suffix == ".csv":
            checked.to_csv(tmp, index=False)
        else:
            checked.to_parquet(tmp, index=False)
    return path


def write_op_tables(frame: pd.DataFrame, folder: str | Path, suffix: str = ".csv") -> dict[str, Path]:
    """One op table per GPU of ``frame`` in ``folder`` (made if missing; ``<device as a file name><suffix>``):
    GPU name -> path."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot make the folder ({exc.strerror})", path=folder,
                         hint="Choose a folder you can write") from None
    out = {}
    for device, rows in frame.groupby("device", sort=True):
        stem = "".join(c if c.isalnum() or c in "-." else "_" for c in str(device)).strip("_") or "gpu"
        out[str(device)] = write_op_table(rows.reset_index(drop=True), folder / f"{stem}{suffix}")
    return out


# -- the shared corpora ------------------------------------------------------------------------------------------

#: NeuSight's elementwise ops that read two tensors (the others read one and a scalar).
_NEUSIGHT_BINARY = frozenset({"add", "mul", "div", "pow"})
_NEUSIGHT_OPS = {"bmm": "bmm", "linear": "linear", "conv": "conv", "softmax": "softmax", "ln": "layernorm"}
_NEUSIGHT_LAUNCH = {"Grid x": "grid_x", "Grid y": "grid_y", "Grid z": "grid_z", "Block x": "block_x",
                    "Block y": "block_y", "Block z": "block_z"}


def from_neusight(path: str | Path) -> pd.DataFrame:
    """One of NeuSight's training files (``../shared/data/cross-gpu/neusight-train/<op>.parquet``) as an op-table
    frame of every GPU in it (FP32; ``Latency`` milliseconds -> ``duration_s``; ``Kernel Name`` -> name,
    ``Grid x``... -> grid_x...).

    Shapes: bmm and linear ``B, M, N, K`` -> batch, m, n, k (linear: B problems share the weight); softmax, ln
    (layernorm) and the elementwise ops ``B, H`` -> m = B, n = H; conv (``B, Input_Channel, Output_Channel,
    Kernel_Szie, Input_Size, Stride, Padding``, square images and filters) -> its implicit GEMM m = B·P·P
    (P = (Input_Size + 2·Padding - Kernel_Szie) // Stride + 1), n = Output_Channel, k = Input_Channel·Kernel_Szie²,
    with bytes = 4·(input + filters + output elements). Binary elementwise ops (add, mul, div, pow) get bytes
    = 3 tensors (the schema's default counts 2).
    """
    path = Path(path)
    try:
        df = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read NeuSight's Parquet file ({exc})", path=path) from None
    need = {"OPName", "Latency", "Device"}
    if not need <= set(df.columns):
        raise InputError(f"not a NeuSight training file (no {', '.join(sorted(need - set(df.columns)))} column)",
                         path=path, hint="Give a file of ../shared/data/cross-gpu/neusight-train/")
    ops = df["OPName"].astype(str).str.strip().str.lower()
    out = pd.DataFrame({"device": df["Device"].astype(str),
                        "op": ops.map(lambda o: _NEUSIGHT_OPS.get(o, "elementwise")), "dtype": "fp32"})
    nan = pd.Series(np.nan, index=df.index)
    for axis in ("batch", "m", "n", "k", "flops", "bytes"):
        out[axis] = nan
    if {"B", "M", "N", "K"} <= set(df.columns):  # bmm, linear
        out["batch"], out["m"], out["n"], out["k"] = df["B"], df["M"], df["N"], df["K"]
    elif {"B", "H"} <= set(df.columns):  # softmax, ln, elementwise: m = B rows of H elements
        out["batch"], out["m"], out["n"] = 1, df["B"], df["H"]
        binary = ops.isin(_NEUSIGHT_BINARY).to_numpy()
        out.loc[binary, "bytes"] = (3 * 4 * df["B"] * df["H"])[binary]
    elif {"B", "Input_Channel", "Output_Channel", "Kernel_Szie", "Input_Size", "Stride", "Padding"} <= set(df.columns):
        b, cin, cout = df["B"], df["Input_Channel"], df["Output_Channel"]
        r, h, s, pad = df["Kernel_Szie"], df["Input_Size"], df["Stride"], df["Padding"]
        p = (h + 2 * pad - r) // s + 1
        out["batch"], out["m"], out["n"], out["k"] = 1, b * p * p, cout, cin * r * r
        out["bytes"] = 4.0 * (b * cin * h * h + cout * cin * r * r + b * cout * p * p)
    else:
        raise InputError("a NeuSight file with no shape columns this reader knows (B, M, N, K; B, H; conv's)",
                         path=path, hint="Give a file of ../shared/data/cross-gpu/neusight-train/")
    out["name"] = df["Kernel Name"].astype(str) if "Kernel Name" in df.columns else ""
    for theirs, ours in _NEUSIGHT_LAUNCH.items():
        if theirs in df.columns:
            out[ours] = df[theirs]
    out["duration_s"] = df["Latency"].astype(np.float64) * 1e-3  # NeuSight's latencies are milliseconds
    return check_frame(out, path)


def from_aiconfigurator(path: str | Path) -> pd.DataFrame:
    """AIConfigurator's GEMM (``../shared/data/cross-gpu/aiconfigurator/gemm.parquet``) or NCCL (``nccl.parquet``)
    latencies as an op-table frame of every GPU in it (``latency`` milliseconds -> ``duration_s``), rows sorted
    by GPU, dtype and shape (so that two GPUs' tables of one sweep are in one order).

    GEMM: ``gemm_dtype`` bfloat16 -> bf16, fp8, fp8_block, nvfp4, the weight-only ``int8_wo``/``int4_wo`` -> int8
    and int4, SmoothQuant ``sq`` -> int8; m, n, k as given (C[m,n] = A[m,k] B[k,n]), batch 1. NCCL: ``op_name``
    (all_gather, all_reduce, alltoall -> all_to_all, reduce_scatter), ``nccl_dtype`` half -> fp16, int8;
    ``num_gpus`` -> gpus; ``message_size`` (elements) x the element size -> message_bytes.
    """
    path = Path(path)
    try:
        df = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read AIConfigurator's Parquet file ({exc})", path=path) from None
    if {"gemm_dtype", "m", "n", "k", "latency", "device"} <= set(df.columns):
        out = pd.DataFrame({"device": df["device"].astype(str), "op": "gemm", "dtype": df["gemm_dtype"].astype(str),
                            "batch": 1, "m": df["m"], "n": df["n"], "k": df["k"]})
    elif {"nccl_dtype", "num_gpus", "message_size", "latency", "device", "op_name"} <= set(df.columns):
        size = np.array([DType(dtype_of(d) or 0).bytes_per_element for d in df["nccl_dtype"].astype(str)])
        out = pd.DataFrame({"device": df["device"].astype(str), "op": df["op_name"].astype(str),
                            "dtype": df["nccl_dtype"].astype(str), "gpus": df["num_gpus"],
                            "message_bytes": np.rint(df["message_size"].to_numpy(np.float64) * size)})
    else:
        raise InputError("not an AIConfigurator gemm.parquet or nccl.parquet (their columns are missing)",
                         path=path, hint="Give ../shared/data/cross-gpu/aiconfigurator/gemm.parquet or nccl.parquet")
    out["duration_s"] = df["latency"].astype(np.float64) * 1e-3  # AIConfigurator's latencies are milliseconds
    checked = check_frame(out, path)
    keys = [c for c in ("device", "op", "dtype", "m", "n", "k", "gpus", "message_bytes") if c in checked.columns]
    return checked.sort_values(keys, kind="stable").reset_index(drop=True)
