"""Fidelity of the learned kernel model on GPUs left out of its fit (issue 19, items 2, 4 and 6).

For every GPU G of the shared corpora, the model is fitted on every pair of
the other GPUs, then predicts each op measured on G from its time on every
other GPU of the same corpus (``nodecast.fit.kernels.leave_one_gpu_out``).
The interval of fold G comes from a second level of folds that leaves G out
too, so coverage is measured on data that neither the weights nor the
quantiles saw.

Corpora (``../shared/data``): ``cross-gpu/neusight-train`` (FP32 PyTorch ops on
P4, P100, T4, V100, A100-40GB), ``cross-gpu/aiconfigurator/gemm.parquet``
(bf16/fp8/fp8-block/nvfp4 GEMMs on A100 SXM, H100 SXM, L40S, B200, GB200)
and ``kernel-zoo`` (11 CUDA programs on GTX 680, GTX TITAN, K20c, GTX 970; read
from its nvprof CSV traces, which takes about a minute).

Printed: WMAPE = sum |predicted - measured| / sum measured (time-weighted),
MAPE = mean |predicted - measured| / measured, per corpus and family and per
held-out GPU, beside three references computed on the same pairs: unchanged
(T_B = T_A), the DRAM-bandwidth ratio and the compute-peak ratio of the op's
unit; and the share of ops whose measured time on G lies in the interval.

    python benchmarks/bench_kernel_learned.py [--data DIR] [--no-zoo] [--json OUT]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def add_wave_scaling(fit) -> None:  # noqa: ANN001 (a KernelFit)
    """Add wave-scaling's time on every held-out pair (``nodecast.models.kernel_wave``: no fitted constant, so
    it needs no fold) as a column of the error tables: each pair's ops as a Trace of back-to-back kernels with
    their names, grids and blocks, projected between the two GPUs' data-sheet nodes."""
    import numpy as np

    from nodecast.fit.workflow import error_table
    from nodecast.machines import load_machine
    from nodecast.models.kernel_wave import WaveScalingModel
    from nodecast.traces.trace import Trace, TraceMeta

    frame, table = fit.held_out, fit.table
    wave = np.full(len(frame), np.nan)
    nodes: dict = {}
    model = WaveScalingModel()
    for (a, b), idx in frame.groupby(["from", "held-out GPU"]).indices.items():
        rows = table.iloc[frame["row"].to_numpy()[idx]]
        names, name_id = np.unique(rows["name"].astype(str).to_numpy(), return_inverse=True)
        dur = np.maximum(np.rint(rows["t_s"].to_numpy() * 1e9).astype(np.int64), 1)
        end = np.cumsum(dur)
        trace = Trace.from_columns({"kind": np.zeros(len(rows), np.int8), "start_ns": end - dur, "end_ns": end,
                                    "name_id": name_id.astype(np.int32), "grid_x": rows["blocks"].to_numpy(),
                                    "block_x": rows["threads"].to_numpy()}, list(names), TraceMeta(), sort=False)
        for g in (a, b):
            nodes.setdefault(g, load_machine(g))
        wave[idx] = model.project(trace, nodes[a], nodes[b]).time_s
    frame["wave"] = wave
    for attr, by in (("by_family", ["corpus", "family", "FLOP and bytes"]), ("by_gpu", ["corpus", "held-out GPU"]),
                     ("pooled", ["all"])):
        f = frame.assign(all="all")
        extra = f.assign(pred=f["wave"]).pipe(error_table, by)[[*by, "WMAPE"]].rename(
            columns={"WMAPE": "wave-scaling"})
        setattr(fit, attr, getattr(fit, attr).merge(extra, on=by))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--no-zoo", action="store_true", help="leave the kernel zoo out (it takes a minute to read)")
    parser.add_argument("--json", type=Path, help="write the tables as JSON")
    parser.add_argument("--wave", action="store_true",
                        help="also score wave-scaling (the default kernel model without metrics) on the same pairs")
    args = parser.parse_args()
    if not (args.data / "cross-gpu").is_dir():
        print(f"no {args.data / 'cross-gpu'}: this benchmark needs ../shared/data", file=sys.stderr)
        return 2

    from nodecast.fit.workflow import fit_kernel_model
    from nodecast.strict_json import dumps

    fit = fit_kernel_model(cross_gpu=args.data / "cross-gpu",
                           kernel_zoo=None if args.no_zoo else args.data / "kernel-zoo",
                           progress=lambda m: print(m, file=sys.stderr))
    if args.wave:
        add_wave_scaling(fit)
    seen = fit.params.seen
    print(f"{seen['examples']:,} GPU-pair examples of {len(seen['gpus'])} GPUs; read in {fit.seconds['read']:.1f} s, "
          f"{len(seen['gpus'])} folds (nested) and the final fit in {fit.seconds['fit']:.1f} s")
    for n in fit.notes:
        print("note:", n)
    pd.set_option("display.width", 200)
    fmt = {"float_format": lambda v: f"{v:.1f}"}
    print("\nLeave-one-GPU-out, per corpus and family (% errors of the time on the held-out GPU)")
    print(fit.by_family.to_string(index=False, **fmt))
    print("\nPer held-out GPU")
    print(fit.by_gpu.to_string(index=False, **fmt))
    print("\nPooled")
    print(fit.pooled.to_string(index=False, **fmt))
    if args.json:
        args.json.write_text(dumps(fit.to_dict(), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
