"""``nodecast fit-kernels`` as a function: read the measurements, fit the learned kernel model, score it.

``fit_kernel_model`` reads the corpora and op tables it is given
(``nodecast.fit.corpus``), scores the model leave-one-GPU-out
(``nodecast.fit.kernels.leave_one_gpu_out``: every GPU predicted by a fit
that never saw it, its interval calibrated without it) and fits the
parameter file on everything (``fit_params``). The result, ``KernelFit``,
holds the scores beside three references computed on the same pairs
(unchanged, DRAM-bandwidth ratio, compute-peak ratio) and the parameters;
``report/`` renders it. Ops whose FLOP and bytes the corpus gives are scored
twice, with them (as from an op table) and without (as from a profiler
trace): the model has a weight set for each case.

Errors (percent of the measured time on the held-out GPU): WMAPE = sum
|predicted - measured| / sum measured; MAPE = mean |predicted - measured| /
measured; coverage = share of ops whose measured time lies in the interval.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nodecast.errors import InputError

if TYPE_CHECKING:
    from nodecast.fit.kernels import FoldResult
    from nodecast.models.kernel_learned import Params

#: Columns of the error tables after the grouping keys.
SCORES = ("ops", "WMAPE", "MAPE", "unchanged", "DRAM ratio", "compute ratio", "in interval")


@dataclass
class KernelFit:
    """A fitted learned kernel model and its leave-one-GPU-out scores (module docstring).

    ``by_family``/``by_gpu``/``pooled``: error tables (percent); ``output``: where the parameter file was
    written (None: not written); ``seconds``: wall-clock time of reading and of fitting.
    """

    params: Params
    by_family: pd.DataFrame
    by_gpu: pd.DataFrame
    pooled: pd.DataFrame
    output: Path | None = None
    notes: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    held_out: pd.DataFrame | None = field(default=None, repr=False)  # ``held_out_frame``, for further scoring
    table: pd.DataFrame | None = field(default=None, repr=False)  # the measurements (``nodecast.fit.corpus``)

    def to_dict(self) -> dict[str, Any]:
        """Every value as plain Python (JSON-ready; errors in percent)."""
        return {"output": str(self.output) if self.output else None, "seen": self.params.seen,
                "by_family": self.by_family.to_dict("records"), "by_gpu": self.by_gpu.to_dict("records"),
                "pooled": self.pooled.to_dict("records")[0] if len(self.pooled) else {}, "notes": list(self.notes),
                "seconds": dict(self.seconds)}


def held_out_frame(folds: list[FoldResult]) -> pd.DataFrame:
    """One row per held-out prediction: corpus, held-out GPU, source GPU, family, T_A, T_B, the model's time and
    interval, and the two ratio references (seconds)."""
    from nodecast.models.kernel_family import Family

    keys = [f.key for f in Family]
    parts = []
    for fold in folds:
        for ex, pred, low, high in zip(fold.pairs, fold.predicted, fold.low, fold.high, strict=True):
            d = ex.d
            parts.append(pd.DataFrame({
                "corpus": ex.corpus, "held-out GPU": fold.gpu, "from": ex.a, "row": ex.rows_a,
                "family": np.asarray(keys, dtype=object)[ex.family],
                "FLOP and bytes": np.where(ex.view % (2 * len(Family)) >= len(Family), "not given", "given"), "t_a": ex.t_a, "t_b": ex.t_b, "pred": pred,
                "low": low, "high": high, "dram": ex.t_a * np.exp(ex.base + d[:, 0]),
                "compute": ex.t_a * np.exp(ex.base)}))
    return pd.concat(parts, ignore_index=True)


def error_table(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per group of ``by``: ``SCORES`` (percent)."""
    def row(g: pd.DataFrame) -> pd.Series:
        tb = g["t_b"].to_numpy()

        def wm(col: str) -> float:
            return float(np.abs(g[col].to_numpy() - tb).sum() / tb.sum() * 100)

        return pd.Series({"ops": len(g), "WMAPE": wm("pred"),
                          "MAPE": float((np.abs(g["pred"].to_numpy() - tb) / tb).mean() * 100),
                          "unchanged": wm("t_a"), "DRAM ratio": wm("dram"), "compute ratio": wm("compute"),
                          "in interval": float(((tb >= g["low"]) & (tb <= g["high"])).mean() * 100)})

    out = frame.groupby(by, sort=True).apply(row, include_groups=False).reset_index()
    out["ops"] = out["ops"].astype(np.int64)
    return out


def fit_kernel_model(op_tables: list[Path] | None = None, cross_gpu: Path | None = None,
                     kernel_zoo: Path | None = None, output: Path | None = None,
                     progress: Callable[[str], None] | None = None, seed: int = 0) -> KernelFit:
    """Fit and score the learned kernel model on the given measurements (module docstring).

    ``op_tables``: a user's op tables (one GPU or several per file; ops pair across GPUs by op, dtype and
    shape); ``cross_gpu``: the ``../shared/data/cross-gpu`` folder (NeuSight and AIConfigurator);
    ``kernel_zoo``: the ``../shared/data/kernel-zoo`` folder. ``output``: write the parameter file there (JSON,
    atomically). InputError when the measurements hold fewer than three GPUs with a data sheet (a fit left
    one GPU out needs two others) or no op measured on two of them.
    """
    import time

    from nodecast.fit import corpus, kernels
    from nodecast.machines.sheets import load_sheet
    from nodecast.models.kernel_features import figures_of_sheet

    say = progress or (lambda _m: None)
    t0 = time.perf_counter()
    parts = []
    if cross_gpu is not None:
        say(f"reading {cross_gpu}")
        parts.append(corpus.shared_corpus(cross_gpu))
    if kernel_zoo is not None:
        say(f"reading {kernel_zoo}")
        parts.append(corpus.kernel_zoo(kernel_zoo, say))
    if op_tables:
        say(f"reading {len(op_tables)} op table(s)")
        parts.append(corpus.op_tables(op_tables))
    if not parts:
        raise InputError("no measurements to fit on", key="fit-kernels",
                         hint="Give op tables, --cross-gpu ../shared/data/cross-gpu or --kernel-zoo DIR")
    table, notes = corpus.without_sheet(pd.concat(parts, ignore_index=True))
    gpus = sorted(table["gpu"].unique())
    if len(gpus) < 3:
        raise InputError(f"measurements of {len(gpus)} GPU(s) with a data sheet ({', '.join(gpus) or 'none'}): "
                         "fitting leave-one-GPU-out needs at least three", key="fit-kernels",
                         hint="Add op tables of the same ops measured on more GPUs")
    figures = {g: figures_of_sheet(load_sheet(g)) for g in gpus}
    exs = kernels.examples(table, figures, np.random.default_rng(seed), None)
    if not exs:
        raise InputError("no op was measured on two GPUs: nothing to pair", key="fit-kernels",
                         hint="Op tables pair by op, dtype and shape; give the same ops measured on several GPUs")
    t_read = time.perf_counter() - t0
    folds = kernels.leave_one_gpu_out(exs, figures, say)
    frame = held_out_frame(folds)
    params = kernels.fit_params(exs, figures, str(output) if output else "(not written)", say)
    if output is not None:
        kernels.write_params(params, str(output))
    return KernelFit(params, error_table(frame, ["corpus", "family", "FLOP and bytes"]),
                     error_table(frame, ["corpus", "held-out GPU"]),
                     error_table(frame.assign(all="all"), ["all"]), output, notes,
                     {"read": t_read, "fit": time.perf_counter() - t0 - t_read}, frame, table)
