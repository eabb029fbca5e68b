"""Kernel-time fidelity of the kernel models across four real GPUs: the kernel zoo, every ordered pair.

../shared/data/kernel-zoo/ holds nvprof GPU traces of 11 CUDA programs at many
input sizes on a GTX 680, a GTX TITAN, a Tesla K20c and a GTX 970 (its
README). For every ordered pair (A, B) of those GPUs and every file both ran,
the run on A is projected onto B with each kernel model and compared launch by
launch with the run on B (``nodecast.workflows.evaluate.evaluate``: kernels aligned by
name and launch order). Errors are kernel-time WMAPE, ``100 * sum|B - P| /
sum B`` over the aligned launches, pooled per program, per pair and overall
(every launch of every pair: the largest runs weigh most), and the unweighted
mean of the per-pair figures.

Machines are the nodes composed from the GPUs' data sheets
(src/nodecast/machines/gpus/: gtx-680, gtx-titan, tesla-k20c, gtx-970), as
``--from``/``--to`` pick them from the traces' device names: reference boost
clocks (GTX 680 1,058 MHz, GTX TITAN 876 MHz, Tesla K20c 706 MHz, GTX 970
1,178 MHz). The dataset's GTX 970 is a factory-overclocked board whose
deviceQuery reports 1,279 MHz (the gtx-970 sheet's [DQ] source);
``--gtx970-clock 1.279e9`` reruns with that clock, as a user who knows the card
would give it in a machine file (``[gpu] sheet = "gtx-970"``, ``clock_hz =
1.279e9``). No constant is fitted to this data: the models take the data
sheets and the source trace only (wave scaling's gamma = 0.5 default is a
midpoint, not a fit; single issue for the issue-limited FP32 rate comes from
the sources, and ``--issue-logo`` shows what choosing it on this data
leave-one-GPU-out would give).

Also the H100 -> MI300X PyTorch pair (../shared/data/traces/kineto_nsfw-image-
detection_{h100,mi300x}.json.gz): kernel names differ across vendors, so
kernel totals are compared.

    python benchmarks/bench_kernel_zoo.py [--step 1] [--gtx970-clock HZ] [--csv out.csv] [--issue-logo] [--learned]

``--learned`` also scores ``learned-kernel``, the one model here with fitted
constants: each target GPU by a fit on the shared cross-GPU corpora and the
zoo's other GPUs, never on it (``nodecast.fit.kernels.params_without``).

Prints Markdown tables (those of docs/kernels.md). ``--step 4`` evaluates every 4th file
(a quick look). ``--issue-logo`` also runs the models with dual issue
(issue-limited FP32 lanes ``min(fp32 lanes, schedulers x dispatch units x
warp size)``: Kepler's 192 lanes instead of 128) and prints the
leave-one-GPU-out choice between single and dual issue: for each held-out
GPU, the variant with the lower pooled default-kernel WMAPE on the pairs
without it, and that variant's WMAPE on the pairs with it.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
GPUS = {"GTX-680": "gtx-680", "Titan": "gtx-titan", "Tesla-K20": "tesla-k20c", "GTX-970": "gtx-970"}
SHORT = {"GTX-680": "680", "Titan": "TITAN", "Tesla-K20": "K20c", "GTX-970": "970"}
MODELS = ["default-kernel", "wave-scaling", "dram-ratio", "flops-ratio"]


def program(file_name: str) -> str:
    """``matMul_gpu-1024.csv`` -> ``matMul_gpu``."""
    return file_name.rsplit("-", 1)[0]


def machines(gtx970_clock: float | None) -> dict:
    """The four composed nodes (data sheets and the default host)."""
    from nodecast.machines import load_machine

    out = {gpu: load_machine(key) for gpu, key in GPUS.items()}
    if gtx970_clock:
        m = out["GTX-970"]
        out["GTX-970"] = replace(m, name=f"{m.name} at {gtx970_clock / 1e6:,.0f} MHz",
                                 gpu=replace(m.gpu, clock_hz=gtx970_clock))
    return out


def dual_issue_lanes(limits):  # noqa: ANN001, ANN201 (TargetLimits -> int | None)
    """Issue-limited FP32 lanes with dual issue: min(FP32 lanes, schedulers x dispatch units x warp size)."""
    from nodecast.models.kernel_ratios import issue_slots

    slots = issue_slots(limits)
    if slots is None or limits.fp32_lanes_per_sm is None:
        return None
    return min(limits.fp32_lanes_per_sm, slots * (limits.dispatch_units_per_scheduler or 1))


def issue_logo(single: dict, dual: dict) -> str:
    """Leave-one-GPU-out choice between single and dual issue (module docstring), as a Markdown table."""
    lines = ["Leave-one-GPU-out: single or dual issue chosen on the pairs without the held-out GPU "
             "(default-kernel, pooled WMAPE %):", "",
             "| held out | pairs without it: single | dual | chosen | pairs with it: chosen variant |",
             "|---|---:|---:|:-:|---:|"]
    for held in GPUS:
        def pooled(sums: dict, with_held: bool) -> float:
            return wmape([v for k, v in sums.items() if k[3] == "default-kernel" and (held in k[:2]) == with_held])
        s_train, d_train = pooled(single, False), pooled(dual, False)
        chosen, sums = ("single", single) if s_train <= d_train else ("dual", dual)
        tie = " (tie)" if abs(s_train - d_train) < 0.05 else ""
        lines.append(f"| {SHORT[held]} | {s_train:.1f} | {d_train:.1f} | {chosen}{tie} | {pooled(sums, True):.1f} |")
    overall = {n: wmape([v for k, v in d.items() if k[3] == "default-kernel"]) for n, d in (("single", single),
                                                                                              ("dual", dual))}
    lines += ["", f"Overall default-kernel WMAPE: single issue {overall['single']:.1f} %, dual issue "
                  f"{overall['dual']:.1f} %."]
    return "\n".join(lines)


def learned_folds(folder: Path) -> dict[str, Path]:
    """Per zoo GPU (sheet key): a parameter file of the learned kernel model fitted without that GPU (on the
    shared cross-GPU corpora and the zoo's other GPUs; ``nodecast.fit.kernels.params_without``), in ``folder``."""
    import pandas as pd

    from nodecast.fit import corpus, kernels
    from nodecast.machines.sheets import load_sheet
    from nodecast.models.kernel_features import figures_of_sheet

    table, _ = corpus.without_sheet(pd.concat([corpus.shared_corpus(DATA / "cross-gpu"),
                                               corpus.kernel_zoo(DATA / "kernel-zoo")], ignore_index=True))
    figures = {g: figures_of_sheet(load_sheet(g)) for g in table["gpu"].unique()}
    exs = kernels.examples(table, figures, np.random.default_rng(0))
    st = [kernels.stats(ex) for ex in exs]
    out = {}
    for key in GPUS.values():
        params = kernels.params_without(exs, st, figures, key)
        path = folder / f"kernel-model-without-{key}.json"
        kernels.write_params(params, str(path))
        out[key] = path
    return out


def zoo_errors(step: int, gtx970_clock: float | None, folds: dict[str, Path] | None = None) -> dict:
    """(source, target, program, model) -> [sum |B - P|, sum B, launches] over the aligned kernel launches.

    ``folds``: per target GPU, the learned kernel model's parameter file fitted without it (``learned_folds``):
    ``learned-kernel`` is then scored too, each target by a fit that never saw it."""
    import os

    from nodecast.workflows.evaluate import evaluate
    from nodecast.models.kernel_learned import ENV
    from nodecast.traces.load import load_trace

    zoo = DATA / "kernel-zoo"
    nodes = machines(gtx970_clock)
    files = {g: sorted(p.name for p in (zoo / g).glob("*.csv"))[::step] for g in GPUS}
    traces = {(g, f): load_trace(zoo / g / f) for g in GPUS for f in files[g]}
    sums: dict = defaultdict(lambda: [0.0, 0.0, 0])
    for a in GPUS:
        for b in GPUS:
            if a == b:
                continue
            for f in files[a]:
                if (b, f) not in traces:
                    continue
                models = MODELS + (["learned-kernel"] if folds else [])
                if folds:
                    os.environ[ENV] = str(folds[GPUS[b]])
                ev = evaluate(traces[(a, f)], traces[(b, f)], nodes[a], nodes[b], models)
                k = ev.category == "kernel"
                actual = ev.actual_s[k]
                for m in models:
                    s = sums[(a, b, program(f), m)]
                    s[0] += float(np.abs(ev.projected_s[m][k] - actual).sum())
                    s[1] += float(actual.sum())
                    s[2] += int(k.sum())
    return dict(sums)


def wmape(parts: list) -> float:
    return 100.0 * sum(p[0] for p in parts) / sum(p[1] for p in parts)


def tables(sums: dict) -> str:
    """The Markdown tables: per pair, per program, per pair and program for the default model, overall."""
    models = list(dict.fromkeys(k[3] for k in sums))
    pairs = [(a, b) for a in GPUS for b in GPUS if a != b]
    programs = sorted({k[2] for k in sums})
    lines = ["Kernel-time WMAPE (%) per ordered GPU pair (A -> B), every program pooled:", "",
             "| pair | launches | " + " | ".join(models) + " | default beats both ratios |",
             "|---|---:|" + "---:|" * len(models) + ":-:|"]
    beats = 0
    for a, b in pairs:
        row = {m: wmape([v for k, v in sums.items() if k[:2] == (a, b) and k[3] == m]) for m in models}
        n = sum(v[2] for k, v in sums.items() if k[:2] == (a, b) and k[3] == models[0])
        ok = row["default-kernel"] < min(row["dram-ratio"], row["flops-ratio"])
        beats += ok
        lines.append(f"| {SHORT[a]} -> {SHORT[b]} | {n:,} | " + " | ".join(f"{row[m]:.1f}" for m in models)
                     + f" | {'yes' if ok else 'no'} |")
    overall = {m: wmape([v for k, v in sums.items() if k[3] == m]) for m in models}
    mean = {m: np.mean([wmape([v for k, v in sums.items() if k[:2] == p and k[3] == m]) for p in pairs])
            for m in models}
    n_all = sum(v[2] for k, v in sums.items() if k[3] == models[0])
    lines.append(f"| **overall** (pooled) | {n_all:,} | " + " | ".join(f"**{overall[m]:.1f}**" for m in models)
                 + f" | {beats} of {len(pairs)} pairs |")
    lines.append("| mean of the 12 pairs | | " + " | ".join(f"{mean[m]:.1f}" for m in models) + " | |")
    lines += ["", "Kernel-time WMAPE (%) per program, every ordered pair pooled:", "",
              "| program | " + " | ".join(models) + " |", "|---|" + "---:|" * len(models)]
    for p in programs:
        lines.append(f"| {p} | " + " | ".join(f"{wmape([v for k, v in sums.items() if k[2] == p and k[3] == m]):.1f}"
                                             for m in models) + " |")
    lines += ["", "default-kernel (here: wave scaling, no metrics) kernel-time WMAPE (%) per pair and program:", "",
              "| program | " + " | ".join(f"{SHORT[a]}->{SHORT[b]}" for a, b in pairs) + " |",
              "|---|" + "---:|" * len(pairs)]
    for p in programs:
        cells = []
        for a, b in pairs:
            key = (a, b, p, "default-kernel")
            cells.append(f"{100 * sums[key][0] / sums[key][1]:.0f}" if key in sums else "")
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cross_vendor() -> str:
    """H100 -> MI300X: kernel totals per model (names differ across vendors)."""
    from nodecast.workflows.evaluate import evaluate
    from nodecast.workflows.evaluate import kernel_table
    from nodecast.machines import load_machine
    from nodecast.traces.load import load_trace

    a = load_trace(DATA / "traces" / "kineto_nsfw-image-detection_h100.json.gz")
    b = load_trace(DATA / "traces" / "kineto_nsfw-image-detection_mi300x.json.gz")
    ev = evaluate(a, b, load_machine("h100-sxm5-80gb"), load_machine("mi300x"), MODELS)
    t = kernel_table(ev)
    lines = ["H100 SXM5 -> MI300X, PyTorch NSFW image detection (Kineto): kernel totals "
             f"({int((a['kind'] == 0).sum())} kernels on A, {int((b['kind'] == 0).sum())} on B; "
             f"{int((ev.category == 'kernel').sum())} launches align, by name or by op, dtype and shape):", "",
             "| model | projected | actual on MI300X | total error | WMAPE of aligned launches |", "|---|---:|---:|---:|---:|"]
    for _, r in t.iterrows():
        lines.append(f"| {r['model']} | {r['projected_s'] * 1e6:,.0f} µs | {r['actual_s'] * 1e6:,.0f} µs | "
                     f"{r['total_error']:.1f} % | {r['WMAPE']:.1f} % |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--step", type=int, default=1, help="evaluate every STEP-th file of each GPU (default all)")
    parser.add_argument("--gtx970-clock", type=float, default=None, metavar="HZ",
                        help="GTX 970 clock instead of the sheet's 1.178e9 (the dataset's card: 1.279e9)")
    parser.add_argument("--csv", metavar="FILE", help="write (source, target, program, model) sums as CSV")
    parser.add_argument("--no-cross-vendor", action="store_true", help="skip the H100 -> MI300X pair")
    parser.add_argument("--learned", action="store_true",
                        help="also score learned-kernel, each target GPU by a fit without it (fits first: ~2 min)")
    parser.add_argument("--issue-logo", action="store_true",
                        help="also run with dual issue and print the leave-one-GPU-out single/dual choice")
    args = parser.parse_args()
    t0 = time.perf_counter()
    folds = None
    if args.learned:
        import tempfile

        folds = learned_folds(Path(tempfile.mkdtemp(prefix="nodecast-zoo-folds-")))
    sums = zoo_errors(args.step, args.gtx970_clock, folds)
    clock = f"GTX 970 at {args.gtx970_clock / 1e6:,.0f} MHz" if args.gtx970_clock else "data-sheet clocks"
    print(f"kernel zoo, {clock}, every {args.step} file(s) ({time.perf_counter() - t0:.0f} s)\n")
    print(tables(sums))
    if args.csv:
        import pandas as pd

        rows = [{"source": k[0], "target": k[1], "program": k[2], "model": k[3], "abs_error_s": v[0],
                 "actual_s": v[1], "launches": v[2]} for k, v in sums.items()]
        pd.DataFrame(rows).to_csv(args.csv, index=False)
    if args.issue_logo:
        from unittest import mock

        with mock.patch("nodecast.models.kernel_ratios.issue_lanes", dual_issue_lanes):
            dual = zoo_errors(args.step, args.gtx970_clock)
        print("\n" + issue_logo(sums, dual))
    if not args.no_cross_vendor:
        print("\n" + cross_vendor())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
