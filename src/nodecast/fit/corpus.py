"""Cross-GPU measurements as one long table: the same op measured on several GPUs, ready to pair.

Sources (``../shared/data/cross-gpu/README.md`` says where each came from):

* NeuSight's per-op FP32 latencies (``neusight-train/<op>.parquet``):
  bmm, linear, conv, softmax, layernorm, elementwise; P4, P100, T4, V100,
  A100-40GB; the kernel name, grid and block of the op's main kernel;
* NVIDIA AIConfigurator's GEMM latencies (``aiconfigurator/gemm.parquet``):
  bf16, fp8, fp8-block, nvfp4 (m, n, k) shapes on A100 SXM, H100 SXM, L40S,
  B200, GB200 (A100's weight-only and SmoothQuant variants are left out: no
  other GPU ran them);
* op tables (``nodecast.traces.op_table``) a user measured on their own GPUs.

One row per (op, GPU) measurement, columns: ``corpus``, ``key`` (the op's
identity across GPUs: op, dtype and shape), ``gpu`` (the data-sheet key the
device name matches), ``family`` (``kernel_family.Family``), ``peak_key``
(index into ``kernel_features.PEAK_KEYS``), ``t_s`` (seconds), ``flops``,
``work_bytes``, ``blocks``, ``threads``, ``tiles``, ``name``. Latencies in
the shared files are in milliseconds; here they are seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from nodecast.errors import InputError
from nodecast.models.kernel_family import Family, name_family, name_tile
from nodecast.models.kernel_features import PEAK_KEYS

#: NeuSight's op files (``neusight-train/<op>.parquet``).
NEUSIGHT_FILES = ("bmm", "linear", "conv", "softmax", "ln", "add", "addu", "mul", "mulu", "div", "divu", "pow",
                  "powu", "relu", "gelu", "tanh")
#: AIConfigurator GEMM types kept: the ones measured on more than one GPU (A100's weight-only and SmoothQuant
#: variants ran on it alone).
AIC_DTYPES = ("bf16", "fp8", "fp8_block", "nvfp4")
#: Output tile taken for a GEMM whose kernel name gives none (AIConfigurator): CUTLASS's common 128 x 128.
DEFAULT_TILE = (128, 128)

COLUMNS = ("corpus", "key", "gpu", "family", "peak_key", "t_s", "flops", "work_bytes", "blocks", "threads",
           "tiles", "name")


def _gpu_keys(devices: pd.Series, where: str) -> pd.Series:
    """Data-sheet key of every device name, None where no sheet matches (those rows are left out by
    ``without_sheet``, which names them: a GPU without data-sheet figures has no ratios to learn from)."""
    from nodecast.machines.names import match_sheet

    keys: dict[object, str | None] = {}
    for dev in devices.unique():
        m = match_sheet(str(dev))
        keys[dev] = None if m is None else m.sheet.key
    return devices.map(keys)


def without_sheet(table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """``table`` without the rows of GPUs no data sheet matches, and a note per such GPU."""
    miss = table["gpu"].isna()
    if not miss.any():
        return table, []
    notes = [f"{n:,} {c} measurements of a GPU no data sheet matches, left out" for c, n in
             table.loc[miss, "corpus"].value_counts().items()]
    return table[~miss].reset_index(drop=True), notes


def _tiles(m: np.ndarray, n: np.ndarray, batch: np.ndarray, names: pd.Series) -> np.ndarray:
    """Output tiles of GEMMs: ceil(m / tm) ceil(n / tn) batch, the tile from the kernel's name or ``DEFAULT_TILE``;
    0 where m or n is unknown."""
    tm = np.full(len(m), DEFAULT_TILE[0], dtype=np.float64)
    tn = np.full(len(m), DEFAULT_TILE[1], dtype=np.float64)
    lookup = {s: name_tile(s) for s in names.unique()}
    tile = names.map(lookup)
    has = tile.notna().to_numpy()
    if has.any():
        tm[has] = [t[0] for t in tile[has]]
        tn[has] = [t[1] for t in tile[has]]
    out = np.ceil(m / tm) * np.ceil(n / tn) * np.where(np.isfinite(batch), batch, 1.0)
    return np.where(np.isfinite(out), out, 0.0)


def _num(frame: pd.DataFrame, column: str, fill: float = np.nan) -> np.ndarray:
    return frame[column].to_numpy(np.float64) if column in frame.columns else np.full(len(frame), fill)


def from_op_frame(frame: pd.DataFrame, corpus: str, where: str = "") -> pd.DataFrame:
    """The long table (module docstring) of a checked op-table frame (``nodecast.traces.op_table.read_frame``,
    ``from_neusight``, ``from_aiconfigurator``): the kernels' rows (collectives and copies are left out).

    ``key``: op, dtype, shape and bytes; for ops other than GEMMs and convolutions the kernel's name too, which
    tells apart ops of one shape (NeuSight's add and mul) and is the same on every GPU for framework kernels
    (GEMM libraries pick other kernels on other GPUs, so their names are not part of the key).
    """
    from nodecast.models.kernel_family import FAMILY_OF_CLASS
    from nodecast.models.kernel_learned import peak_key_of
    from nodecast.traces.op_table import default_names, with_work
    from nodecast.traces.op_classes import DType, OpClass, dtype_of, op_class_of

    frame = with_work(frame)
    op = frame["op"].map(lambda o: int(op_class_of(o) or 0)).to_numpy(np.int64)
    family = np.array([FAMILY_OF_CLASS.get(OpClass(c), -1) for c in range(len(OpClass))])[op]
    keep = family >= 0
    frame, op, family = frame[keep].reset_index(drop=True), op[keep], family[keep].astype(np.int8)
    dtype = (frame["dtype"].map(lambda d: int(dtype_of(d) or 0) if isinstance(d, str) and d else 0).to_numpy(np.int64)
             if "dtype" in frame.columns else np.zeros(len(frame), dtype=np.int64))
    names = (frame["name"].astype(str) if "name" in frame.columns else pd.Series([""] * len(frame))).replace(
        {"nan": "", "None": ""})
    names = names.where(names != "", pd.Series(default_names(frame)))
    batch, m, n, k = (_num(frame, c) for c in ("batch", "m", "n", "k"))
    matrix = np.isin(family, [Family.GEMM, Family.CONV])
    shape = frame["op"].astype(str) + ":" + (frame["dtype"].astype(str) if "dtype" in frame.columns else "")
    for c in ("batch", "m", "n", "k", "bytes"):
        shape = shape + ":" + pd.Series(_num(frame, c)).map(lambda v: "" if np.isnan(v) else f"{v:.0f}")
    key = shape.where(pd.Series(matrix), shape + ":" + names)
    grid = [_num(frame, c, 1.0) for c in ("grid_x", "grid_y", "grid_z")]
    block = [_num(frame, c, 1.0) for c in ("block_x", "block_y", "block_z")]
    blocks = np.nan_to_num(np.maximum(grid[0], 0) * np.maximum(grid[1], 1) * np.maximum(grid[2], 1)).astype(np.int64)
    threads = np.nan_to_num(np.maximum(block[0], 0) * np.maximum(block[1], 1) * np.maximum(block[2], 1)).astype(
        np.int64)
    if "grid_x" not in frame.columns:
        blocks[:] = 0
        threads[:] = 0
    combos = pd.DataFrame({"f": family, "d": dtype, "n": names})
    distinct = combos.drop_duplicates()
    codes = {(f, d, nm): PEAK_KEYS.index(peak_key_of(Family(f), DType(d), nm))
             for f, d, nm in distinct.itertuples(index=False)}
    peak = np.array([codes[c] for c in combos.itertuples(index=False, name=None)], dtype=np.int8)
    return pd.DataFrame({
        "corpus": corpus, "key": key, "gpu": _gpu_keys(frame["device"].astype(str), where), "family": family,
        "peak_key": peak, "t_s": frame["duration_s"].to_numpy(np.float64), "flops": _num(frame, "flops"),
        "work_bytes": _num(frame, "bytes"), "blocks": blocks, "threads": threads,
        "tiles": np.where(matrix, _tiles(m, n, batch, names), 0.0), "name": names})


def neusight(folder: Path) -> pd.DataFrame:
    """The NeuSight training files of ``folder`` as the long table (module docstring)."""
    from nodecast.traces.op_table import from_neusight

    parts = [from_op_frame(from_neusight(folder / f"{op}.parquet"), "neusight", str(folder / f"{op}.parquet"))
             for op in NEUSIGHT_FILES if (folder / f"{op}.parquet").is_file()]
    if not parts:
        raise InputError("no NeuSight op file (bmm.parquet, linear.parquet...) in the folder", path=folder,
                         hint="Give ../shared/data/cross-gpu/neusight-train")
    return pd.concat(parts, ignore_index=True)


def aiconfigurator(path: Path) -> pd.DataFrame:
    """AIConfigurator's ``gemm.parquet`` as the long table (``AIC_DTYPES`` only)."""
    from nodecast.traces.op_table import from_aiconfigurator

    frame = from_aiconfigurator(path)
    frame = frame[frame["dtype"].isin(AIC_DTYPES)].reset_index(drop=True)
    return from_op_frame(frame, "aiconfigurator", str(path))


def shared_corpus(data: Path) -> pd.DataFrame:
    """NeuSight and AIConfigurator from ``data`` (the ``cross-gpu`` folder of ``../shared/data``)."""
    return pd.concat([neusight(data / "neusight-train"), aiconfigurator(data / "aiconfigurator" / "gemm.parquet")],
                     ignore_index=True)


def op_tables(paths: list[Path]) -> pd.DataFrame:
    """A user's op tables (``nodecast.traces.op_table``; one GPU or several per file) as the long table, one
    corpus per call (the ops of one sweep measured on several GPUs pair by op, dtype and shape)."""
    from nodecast.traces.op_table import read_frame

    parts = [from_op_frame(read_frame(p), "op tables", str(p)) for p in paths]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame({c: [] for c in COLUMNS})


def traces_table(paths: list[Path], corpus: str, progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """The kernels of profiler traces (or op tables) as the long table: one row per kernel launch, keyed by the
    file's name, the kernel's name and its occurrence, so that the same program and input traced on two GPUs
    (the kernel zoo's ``<GPU>/<program>-<size>.csv``) pair launch by launch. The GPU is the trace's first device
    with a kernel (a run on ``cudaSetDevice(1)`` records device 1).
    """
    from nodecast.models.kernel_learned import op_features
    from nodecast.traces.kinds import OpKind
    from nodecast.traces.load import load_trace

    parts = []
    for i, path in enumerate(paths):
        trace = load_trace(path)
        kernels = trace["kind"] == OpKind.KERNEL
        if not kernels.any():
            continue
        device = int(trace["device"][kernels].min())
        rows = np.flatnonzero(kernels & (trace["device"] == device))
        if device not in trace.meta.gpus:
            continue
        ops = op_features(trace, rows)
        names = pd.Series(trace.kernel_names()[rows], dtype=object).fillna("")
        occurrence = names.groupby(names).cumcount().astype(str)
        parts.append(pd.DataFrame({
            "corpus": corpus, "key": path.name + ":" + names + ":" + occurrence,
            "gpu": _gpu_keys(pd.Series([trace.meta.gpus[device]] * len(rows)), str(path)),
            "family": ops.family, "peak_key": ops.peak_key, "t_s": ops.t_a_s, "flops": ops.flops,
            "work_bytes": ops.work_bytes, "blocks": ops.blocks, "threads": ops.threads, "tiles": ops.tiles,
            "name": names}))
        if progress is not None and (i + 1) % 250 == 0:
            progress(f"{corpus}: {i + 1} of {len(paths)} files read")
    if not parts:
        return pd.DataFrame({c: [] for c in COLUMNS})
    return pd.concat(parts, ignore_index=True)


def kernel_zoo(folder: Path, progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """The kernel zoo (``../shared/data/kernel-zoo``: one folder per GPU of nvprof GPU-trace CSV runs)."""
    return traces_table(sorted(folder.glob("*/*.csv")), "kernel-zoo", progress)
