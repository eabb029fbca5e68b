"""Fidelity of the collective model on NVIDIA's NCCL measurements (issue 21, deliverable 5), and its throughput.

``../shared/data/cross-gpu/aiconfigurator/nccl.parquet`` holds NCCL latencies
(all_gather, all_reduce, alltoall, reduce_scatter; 2, 4 and 8 GPUs; 256 to
512 M elements of fp16 and int8) on 8-GPU A100 SXM, H100 SXM and B200 SXM
NVSwitch nodes and an 8x L40S PCIe server. Each system is the catalogue node
``NODES`` names. Three ways of predicting a node's latencies:

(a) absolute, data sheets alone: NCCL's cost model on the node's links
    (``nodecast.models.collective_tuning``), nothing fitted;
(a') absolute, calibrated: the same with three constants
    (``collective_tuning.Calibration``: bus efficiency, NVLS rate per channel,
    latency scale) fitted on the other NVSwitch nodes only, the node itself
    left out (leave-one-node-out); the L40S is in no fit (its 4- and 8-GPU
    measurements run at 1-5 GB/s busbw, far under its PCIe links);
(b) differential: the latency measured on another node X x model(node) /
    model(X), with the data-sheet model, and with the calibrated one fitted
    without the node.

Errors: WMAPE = 100 sum|pred - meas| / sum meas (dominated by large
messages) and MAPE = 100 mean |pred - meas| / meas (every size alike: small
messages are latency bound). Only held-out figures are printed.

    python benchmarks/bench_collectives.py               # the fidelity tables (Markdown)
    python benchmarks/bench_collectives.py --throughput  # rows per second of the vectorized model
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cross-gpu" / "aiconfigurator" / "nccl.parquet"
#: AIConfigurator's system -> the catalogue node it is (device names in the file: A100-SXM4-80GB, H100 80GB HBM3,
#: B200, L40S).
NODES = {"a100_sxm": "dgx-a100-80gb", "h100_sxm": "h100-sxm5-server", "b200_sxm": "dgx-b200", "l40s": "l40s-pcie-8gpu"}
NVSWITCH = ("a100_sxm", "h100_sxm", "b200_sxm")
#: The grids the calibration searches (coordinate descent, three rounds).
EFFICIENCIES = np.round(np.arange(0.60, 1.0001, 0.01), 2)
NVLS_RATES = np.round(np.arange(8e9, 40e9 + 1, 0.25e9), -6)
LATENCY_SCALES = np.round(np.arange(0.6, 2.5001, 0.02), 2)


def load(path: Path = DATA) -> pd.DataFrame:
    """The measurements with nccl-tests' size in bytes, the op class and the latency in seconds."""
    from nodecast.traces.op_classes import DType, dtype_of, op_class_of

    d = pd.read_parquet(path)
    dtypes = [dtype_of(t) for t in d["nccl_dtype"]]
    d["bytes"] = d["message_size"] * np.array([DType(t).bytes_per_element for t in dtypes])
    d["op"] = [int(op_class_of(o)) for o in d["op_name"]]
    d["measured_s"] = d["latency"] * 1e-3
    return d


def predict(d: pd.DataFrame, system: str, calibration=None) -> np.ndarray:
    """The model's latency (s) of every row of ``system`` on its catalogue node."""
    from nodecast.machines import load_machine
    from nodecast.models.collective_fabric import fabric
    from nodecast.models.collective_tuning import DATA_SHEETS, predict as model

    rows = d[d["system"] == system]
    fab = fabric(load_machine(NODES[system]))
    return model(rows["op"].to_numpy(), rows["bytes"].to_numpy(), rows["num_gpus"].to_numpy(), fab,
                 calibration=calibration or DATA_SHEETS).time_s


def errors(pred: np.ndarray, meas: np.ndarray) -> tuple[float, float]:
    """WMAPE and MAPE, %."""
    return 100 * np.abs(pred - meas).sum() / meas.sum(), 100 * np.mean(np.abs(pred - meas) / meas)


def fit(d: pd.DataFrame, systems: list[str]):
    """The calibration that minimises WMAPE + MAPE averaged over ``systems`` (coordinate descent on grids)."""
    from nodecast.models.collective_tuning import Calibration

    meas = {s: d.loc[d["system"] == s, "measured_s"].to_numpy() for s in systems}

    def loss(cal: Calibration) -> float:
        return float(np.mean([sum(errors(predict(d, s, cal), meas[s])) for s in systems]))

    cal = Calibration()
    for _ in range(3):
        cal = min((Calibration(e, cal.nvls_channel_bps, cal.latency_scale) for e in EFFICIENCIES), key=loss)
        cal = min((Calibration(cal.bus_efficiency, float(v), cal.latency_scale) for v in NVLS_RATES), key=loss)
        cal = min((Calibration(cal.bus_efficiency, cal.nvls_channel_bps, float(s)) for s in LATENCY_SCALES), key=loss)
    return cal


def fidelity(d: pd.DataFrame) -> None:
    """Print the summary per node, the detail per node, op and GPU count, and the differential pairs."""
    systems = list(NODES)
    fits = {s: fit(d, [x for x in NVSWITCH if x != s]) for s in systems}
    d = d.copy()
    for s in systems:
        rows = d["system"] == s
        d.loc[rows, "a"] = predict(d, s)
        d.loc[rows, "a_cal"] = predict(d, s, fits[s])
    key = ["op_name", "nccl_dtype", "num_gpus", "message_size"]
    pairs = []
    for target in systems:
        for source in systems:
            if source == target:
                continue
            src = d[d["system"] == source].set_index(key)
            tgt = d[d["system"] == target].set_index(key)
            j = src.merge(tgt, left_index=True, right_index=True, suffixes=("_x", ""))
            # the calibrated model on both sides, fitted without the target (the source may be in the fit)
            cal = fits[target]
            on_x = pd.Series(predict(d, source, cal), index=src.index).reindex(j.index)
            on_t = pd.Series(predict(d, target, cal), index=tgt.index).reindex(j.index)
            plain = j["measured_s_x"] * j["a"] / j["a_x"]
            calibrated = j["measured_s_x"] * on_t / on_x
            pairs.append({"node": target, "from": source,
                          **dict(zip(("b WMAPE", "b MAPE"), errors(plain.to_numpy(), j["measured_s"].to_numpy()))),
                          **dict(zip(("b2 WMAPE", "b2 MAPE"),
                                     errors(calibrated.to_numpy(), j["measured_s"].to_numpy()))),
                          # "nothing changes": the other node's time as it was measured, the answer to beat
                          **dict(zip(("u WMAPE", "u MAPE"),
                                     errors(j["measured_s_x"].to_numpy(), j["measured_s"].to_numpy())))})
    pairs = pd.DataFrame(pairs)

    print("Held-out latency error per node (%). (a) NCCL's model from data sheets alone; (a') the same with "
          "constants fitted on the other NVSwitch nodes; (b) measured on another NVSwitch node x model ratio, "
          "median over those nodes (data-sheet model); (b') the same with the calibrated model fitted without "
          "the node.\n")
    print("| node | system | rows | (a) WMAPE | (a) MAPE | (a') WMAPE | (a') MAPE | (b) WMAPE | (b) MAPE | "
          "(b') WMAPE | (b') MAPE |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in systems:
        rows = d[d["system"] == s]
        wa, ma = errors(rows["a"].to_numpy(), rows["measured_s"].to_numpy())
        wc, mc = errors(rows["a_cal"].to_numpy(), rows["measured_s"].to_numpy())
        p = pairs[(pairs["node"] == s) & pairs["from"].isin(NVSWITCH)]
        print(f"| {NODES[s]} | {s} | {len(rows):,} | {wa:.1f} | {ma:.1f} | {wc:.1f} | {mc:.1f} | "
              f"{p['b WMAPE'].median():.1f} | {p['b MAPE'].median():.1f} | {p['b2 WMAPE'].median():.1f} | "
              f"{p['b2 MAPE'].median():.1f} |")
    print("\nConstants fitted leave-one-node-out (used only in (a') and (b')):\n")
    print("| left out | bus efficiency | NVLS rate per channel (GB/s) | latency scale |")
    print("|---|---:|---:|---:|")
    for s in systems:
        c = fits[s]
        print(f"| {s} | {c.bus_efficiency:.2f} | {c.nvls_channel_bps / 1e9:.2f} | {c.latency_scale:.2f} |")
    print("\nPer node, op and GPU count (%), data-sheet model (a) and calibrated (a'):\n")
    print("| node | op | GPUs | (a) WMAPE | (a) MAPE | (a') WMAPE | (a') MAPE | model's choice at the largest size |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for (s, op, n), rows in d.groupby(["system", "op_name", "num_gpus"], sort=True):
        wa, ma = errors(rows["a"].to_numpy(), rows["measured_s"].to_numpy())
        wc, mc = errors(rows["a_cal"].to_numpy(), rows["measured_s"].to_numpy())
        print(f"| {s} | {op} | {n} | {wa:.1f} | {ma:.1f} | {wc:.1f} | {mc:.1f} | {choice(rows, s)} |")
    print("\nDifferential, per pair of nodes (%); unchanged: the other node's measured time as is, the answer to beat:\n")
    print("| node | from | (b) WMAPE | (b) MAPE | (b') WMAPE | (b') MAPE | unchanged WMAPE | unchanged MAPE |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for _, r in pairs.iterrows():
        print(f"| {r['node']} | {r['from']} | {r['b WMAPE']:.1f} | {r['b MAPE']:.1f} | {r['b2 WMAPE']:.1f} | "
              f"{r['b2 MAPE']:.1f} | {r['u WMAPE']:.1f} | {r['u MAPE']:.1f} |")


def choice(rows: pd.DataFrame, system: str) -> str:
    """NCCL's model's algorithm/protocol for the largest message of ``rows`` (data-sheet model)."""
    from nodecast.machines import load_machine
    from nodecast.models.collective_fabric import fabric
    from nodecast.models.collective_tuning import ALGORITHMS, PROTOCOLS, predict as model

    big = rows.loc[[rows["bytes"].idxmax()]]
    c = model(big["op"].to_numpy(), big["bytes"].to_numpy(), big["num_gpus"].to_numpy(),
              fabric(load_machine(NODES[system])))
    return f"{ALGORITHMS[c.algorithm[0]]}/{PROTOCOLS[c.protocol[0]]}"


def throughput(rows: int = 1_000_000, repeat: int = 5) -> None:
    """Rows per second of ``collective_tuning.predict`` (every op, size and group of an 8-GPU NVLS node)."""
    from nodecast.machines import load_machine
    from nodecast.models.collective_busbw import COLLECTIVES
    from nodecast.models.collective_fabric import fabric
    from nodecast.models.collective_tuning import predict as model

    rng = np.random.default_rng(0)
    op = rng.choice(np.array(COLLECTIVES, dtype=np.int16), rows)
    size = 2.0 ** rng.integers(3, 34, rows)
    n = rng.integers(2, 9, rows)
    fab = fabric(load_machine("h100-sxm5-server"))
    model(op[:1000], size[:1000], n[:1000], fab)  # warm
    best = min(_timed(model, op, size, n, fab) for _ in range(repeat))
    print(f"collective model: {rows:,} rows (7 collectives, 8 B to 8 GiB, 2 to 8 GPUs, h100-sxm5-server) in "
          f"{best * 1e3:.0f} ms: {rows / best / 1e6:.2f} M rows/s (best of {repeat})")


def _timed(model, op, size, n, fab) -> float:
    t0 = time.perf_counter()
    model(op, size, n, fab)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA, help="nccl.parquet (default: ../shared's)")
    parser.add_argument("--throughput", action="store_true", help="time the model instead")
    args = parser.parse_args()
    if args.throughput:
        throughput()
        return
    fidelity(load(args.data))


if __name__ == "__main__":
    main()
