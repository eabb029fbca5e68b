"""What each op of an op table computes, where the table does not say: FLOP and least DRAM bytes from its shape
(``work``, ``with_work``; the formulas are ``op_table``'s module docstring's), and the kernel names rows without
a ``name`` get (``default_names``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nodecast.traces.op_classes import DType, OpClass
from nodecast.traces.op_table_frame import SCHEMA


#: Ops whose work is computed from m, n, k (``with_work``).
_GEMM_LIKE = (OpClass.GEMM, OpClass.BMM, OpClass.LINEAR, OpClass.CONV, OpClass.ATTENTION)
#: FLOP per element of the ops over (B, H) tensors (exp, max, divide... each counted as one).
_FLOPS_PER_ELEMENT = {OpClass.ELEMENTWISE: 1.0, OpClass.SOFTMAX: 5.0, OpClass.LAYERNORM: 8.0, OpClass.REDUCTION: 1.0}


def number_column(frame: pd.DataFrame, name: str) -> np.ndarray:
    """A number column as float64, NaN where absent."""
    if name in frame.columns:
        return pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    return np.full(len(frame), np.nan)


def codes(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(OpClass codes, DType codes) of a checked frame's canonical ``op`` and ``dtype`` keys (0: not recorded)."""
    ops = {c.key: int(c) for c in OpClass}
    dtypes = {d.key: int(d) for d in DType} | {"": 0}
    op = np.fromiter((ops.get(str(v), 0) for v in frame["op"]), dtype=np.int8, count=len(frame))
    dt = frame["dtype"] if "dtype" in frame.columns else pd.Series([""] * len(frame))
    dtype = np.fromiter((dtypes.get("" if pd.isna(v) else str(v), 0) for v in dt), dtype=np.int8, count=len(frame))
    return op, dtype


def batch_sizes(frame: pd.DataFrame) -> np.ndarray:
    """Batch per row: as given, else 1 where the row has a shape (m, n or k), else NaN."""
    batch = number_column(frame, "batch")
    shaped = ~np.isnan(number_column(frame, "m")) | ~np.isnan(number_column(frame, "n")) | ~np.isnan(number_column(frame, "k"))
    return np.where(np.isnan(batch) & shaped, 1.0, batch)


def work(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(flops, bytes) per row of a checked op-table frame (``read_frame``), float64, NaN where unknown: the
    table's own values where given, else computed from the shape (``op_table``'s module docstring; ``bytes``
    of a copy is its size, not its DRAM traffic: the traffic is returned)."""
    op, dtype = codes(frame)
    e = np.array([DType(d).bytes_per_element for d in range(len(DType))])[dtype]
    b, m, n, k = batch_sizes(frame), number_column(frame, "m"), number_column(frame, "n"), number_column(frame, "k")
    flops = np.full(len(frame), np.nan)
    traffic = np.full(len(frame), np.nan)
    gemm = np.isin(op, [OpClass.GEMM, OpClass.BMM])
    flops[gemm] = 2 * (b * m * n * k)[gemm]
    traffic[gemm] = (e * b * (m * k + k * n + m * n))[gemm]
    linear = op == OpClass.LINEAR
    flops[linear] = 2 * (b * m * n * k)[linear]
    traffic[linear] = (e * (b * m * k + k * n + b * m * n))[linear]
    conv = op == OpClass.CONV
    flops[conv] = 2 * (b * m * n * k)[conv]
    attention = op == OpClass.ATTENTION
    flops[attention] = 4 * (b * m * n * k)[attention]
    traffic[attention] = (e * b * (2 * m * k + 2 * n * k))[attention]
    elements = b * m * np.where(np.isnan(n), 1.0, n)
    for cls, per in _FLOPS_PER_ELEMENT.items():
        rows = op == cls
        flops[rows] = per * elements[rows]
        traffic[rows] = (e * (elements + b * m) if cls == OpClass.REDUCTION else 2 * e * elements)[rows]
    copy = op == OpClass.COPY
    flops[copy] = 0.0
    size = number_column(frame, "bytes")
    traffic[copy] = 2 * size[copy]
    given_flops = number_column(frame, "flops")
    flops = np.where(np.isnan(given_flops), flops, given_flops)
    traffic = np.where(np.isnan(size) | copy, traffic, size)
    return flops, traffic


def with_work(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of a checked op-table frame with ``flops`` and ``bytes`` filled from the shapes where empty
    (``work``; a copy's ``bytes`` stays its size)."""
    flops, traffic = work(frame)
    out = frame.copy()
    out["flops"] = flops
    copy = (out["op"] == OpClass.COPY.key).to_numpy()
    out["bytes"] = np.where(copy, number_column(frame, "bytes"), traffic)
    return out[[c for c in SCHEMA if c in out.columns]]


def default_names(frame: pd.DataFrame) -> list[str]:
    """Kernel names built from op, dtype and shape (``gemm_bf16_m4096_n4096_k4096``, ``bmm_fp32_b6_m27_n21_k390``,
    ``all_reduce_fp16_g8_1048576B``): what rows without a ``name`` are called, so that two tables of one sweep
    pair by name."""
    cols = {c: number_column(frame, c) for c in ("m", "n", "k", "gpus", "message_bytes")}
    batch = number_column(frame, "batch")
    dtype = frame["dtype"] if "dtype" in frame.columns else pd.Series([""] * len(frame))
    out = []
    for i, (op, dt) in enumerate(zip(frame["op"], dtype, strict=True)):
        parts = [str(op)]
        if isinstance(dt, str) and dt:
            parts.append(dt)
        if batch[i] > 1:
            parts.append(f"b{int(batch[i])}")
        parts += [f"{axis}{int(cols[axis][i])}" for axis in ("m", "n", "k") if not np.isnan(cols[axis][i])]
        if not np.isnan(cols["gpus"][i]):
            parts.append(f"g{int(cols['gpus'][i])}")
        if not np.isnan(cols["message_bytes"][i]):
            parts.append(f"{int(cols['message_bytes'][i])}B")
        out.append("_".join(parts))
    return out
