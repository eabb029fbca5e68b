"""Forecast on the same node through the models (issue 13, target 5b), every trace in ../shared/data/traces.

For every Nsight Systems, nvprof and Kineto trace, and the nvprof GPU-trace
CSV: ``forecast --from A --to A``, where A is the node composed from the
trace's GPU name (``nodecast.machines.resolve_source``: the GPU's data sheet,
its host link, the default host), or the catalogue's machine file for the
traces of AHEAD's Titan and Summit nodes (``NODES``), with the absolute copy
model ``ahead`` and the default kernel model (``MODELS``). The default copy
model, ``ahead-scaled``, takes the source run as its calibration and gives
every copy its measured time back on the same node by construction (a test
checks it, tests/workflows/test_source_calibration.py): what this measures is how
far the data sheets alone land. The
graph is the same as in the same-node replay (target 5a,
``bench_replay_fidelity.py``); what differs is every op's duration, which now
comes from a model instead of the measurement. The table says how far the
forecast lands from the measured run, per category:

- end-to-end (first API call to last GPU op end) and GPU-busy (union of op
  intervals, summed over GPUs): (forecast - measured) / measured;
- kernels, copies and memsets: (sum of forecast op times - sum of measured
  op times) / measured, and which model gave them (``kept``: no model
  handles them, they keep their measured time, so their error is 0 by
  construction and says nothing about a model).

    python benchmarks/bench_forecast_fidelity.py [--traces DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "traces"
#: Traces whose node the catalogue describes (AHEAD's own Titan and Summit nodes): A is that machine file;
#: every other trace's node is composed from its GPU's data sheet and the default host.
NODES = {"_titan-k20x.nvvp": "titan", "_summit-v100.nvvp": "summit"}
#: The models: copies by the data sheets alone (the default, ``ahead-scaled``, is exact here by construction).
MODELS = ("ahead", "default-kernel")


def _err(value: float, reference: float) -> float:
    return (value - reference) / reference if reference else float("nan")


def one(path: Path) -> dict:
    from nodecast.errors import InputError
    from nodecast.workflows.evaluate_run import _category_models, _category_times
    from nodecast.cost.ops import CostOptions
    from nodecast.workflows.forecast import forecast, read_trace_and_api
    from nodecast.machines import resolve_source

    t0 = time.perf_counter()
    trace, api = read_trace_and_api(path)
    spec = next((m for suffix, m in NODES.items() if path.name.endswith(suffix)), None)
    try:
        node = resolve_source(trace, spec)
    except InputError as exc:
        return {"trace": path.name, "error": exc.message}
    r = forecast(trace, api, node, node, CostOptions(models=MODELS))
    g = r.graph
    measured_dur = r.measured.end_s - r.measured.start_s
    meas = _category_times(g, measured_dur)
    fc = _category_times(g, r.costs.duration_s)
    models = _category_models(r)
    busy = r.busy_s()
    out = {
        "trace": path.name, "node": node.name, "ops": int(g.gpu_mask().sum()),
        "e2e_measured_s": r.measured_end_to_end_s, "e2e_forecast_s": r.end_to_end_s,
        "e2e_err": _err(r.end_to_end_s, r.measured_end_to_end_s),
        "e2e_replay_err": _err(r.replayed_end_to_end_s, r.measured_end_to_end_s),
        "busy_err": _err(sum(busy["forecast on B"].values()), sum(busy["measured on A"].values())),
        "kept_ops": int(r.costs.kept(g).sum()), "seconds": time.perf_counter() - t0,
    }
    for cat in ("kernels", "copies (all kinds)", "memsets"):
        if cat in meas:
            out[cat] = {"measured_s": meas[cat], "forecast_s": fc[cat], "err": _err(fc[cat], meas[cat]),
                        "models": models.get(cat, "")}
    return out


def _pct(v: float) -> str:
    if v is None or not np.isfinite(v):
        return "—"
    text = f"{100 * v:+.1f} %"
    return "0.0 %" if text in ("+0.0 %", "-0.0 %") else text  # a sign on what rounds to zero says nothing


def _cat(row: dict, cat: str) -> str:
    c = row.get(cat)
    if c is None:
        return "—"
    models = c["models"].replace("kept at A's time", "kept")
    return f"{_pct(c['err'])} ({models})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=Path, default=TRACES)
    ap.add_argument("--json", type=Path, default=None, help="write every row as JSON")
    args = ap.parse_args()
    files = sorted(p for p in args.traces.iterdir() if p.name.startswith(("nsys_", "nvprof", "kineto_")))
    rows = [one(p) for p in files]
    print("| trace | node (A = B) | GPU ops | end-to-end measured (ms) | forecast (ms) | error | GPU-busy error "
          "| kernels | copies | memsets |")
    print("|---|---|---:|---:|---:|---:|---:|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['trace']} | not forecast: {r['error']} |||||||||")
            continue
        print(f"| {r['trace']} | {r['node']} | {r['ops']:,} | {r['e2e_measured_s'] * 1e3:,.2f} | "
              f"{r['e2e_forecast_s'] * 1e3:,.2f} | {_pct(r['e2e_err'])} | {_pct(r['busy_err'])} | "
              f"{_cat(r, 'kernels')} | {_cat(r, 'copies (all kinds)')} | {_cat(r, 'memsets')} |")
    ok = [r for r in rows if "error" not in r]
    errs = np.array([abs(r["e2e_err"]) for r in ok])
    print(f"\n{len(ok)} of {len(rows)} traces forecast; |end-to-end error| median {100 * np.median(errs):.1f} %, "
          f"max {100 * errs.max():.1f} %; within 10 %: {int((errs < 0.10).sum())}; "
          f"total {sum(r['seconds'] for r in ok):.1f} s")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
