"""Transfer-model fidelity on every shipped transfer pair, per copy kind, every transfer model (issue 12).

Two runs of the same program, A and B, are evaluated as ``nodecast evaluate A
B --from X --to Y`` does: A's copies are projected onto B's node by every
transfer model, paired with B's copies (``nodecast.workflows.evaluate.align``), and
the WMAPE of each model is printed per copy kind (``all`` = every paired
copy). Pairs, from ../shared/data/traces (SOURCES.md):

- across nodes, both directions: AHEAD's bandwidthTest on Titan (K20X, PCIe
  gen2) and Summit (V100, NVLink 2.0), host-to-device pinned and pageable
  (the device-to-host and device-to-device runs exist for Titan only);
- on one node (``--from X --to X``, the node composed from the GPU's data
  sheet and nodecast's default host), both directions: runs and variants of
  one program whose copies pair: the OpenMP heat data-region runs (T4), the
  heat map-every-step variant against the data-region run (T4; 3 of its 200
  copies pair), Rodinia gaussian baseline and block16 (RTX 3090), SpTRSV on
  two input matrices (T4; 3 copies pair). The two vectoradd variants of the
  T4 (nvprof, 1M) pair no copy (pageable against pinned) and are listed
  apart.

Prints a Markdown table (the one in docs/transfers.md) and the copy rate notes.

    python benchmarks/bench_transfer_fidelity.py [--traces DIR]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "traces"

T = "nvprof_ahead-bandwidthtest-{}_titan-k20x.nvvp"
S = "nvprof_ahead-bandwidthtest-{}_summit-v100.nvvp"
HEAT = "nsys_omp-offload-heat-8000_t4_{}.sqlite"
GAUSS = "nsys_rodinia-gaussian-4096_rtx3090_{}.sqlite"
SPTRSV = "nsys_sptrsv-levelset-{}_t4.sqlite"

#: (label, trace A, trace B, --from, --to); each pair also runs B -> A.
PAIRS = [
    ("bandwidthTest HtoD pinned", T.format("htod-pinned"), S.format("htod-pinned"), "titan", "summit"),
    ("bandwidthTest HtoD pageable", T.format("htod-pageable"), S.format("htod-pageable"), "titan", "summit"),
    ("heat data-region, two runs", HEAT.format("data-region"), HEAT.format("data-region-run3"), "t4", "t4"),
    ("heat map-every-step / data-region", HEAT.format("map-every-step"), HEAT.format("data-region"), "t4", "t4"),
    ("gaussian baseline / block16", GAUSS.format("baseline"), GAUSS.format("block16"), "rtx-3090", "rtx-3090"),
    ("SpTRSV matrices la / ca", SPTRSV.format("la"), SPTRSV.format("ca"), "t4", "t4"),
]
#: Same-node variants whose copies do not pair (said below the table).
UNPAIRED = [("nvprof_vectoradd-1M_t4.nvvp", "nvprof_vectoradd-streams-1M_t4.nvvp", "t4")]


def _pct(x: float) -> str:
    return "—" if math.isnan(x) else f"{x:.1f}"


def evaluate_pairs(folder: Path) -> tuple[list[str], list[list[str]], list[str]]:
    """(model columns, table rows, notes) over ``PAIRS`` in both directions."""
    from nodecast.workflows.evaluate import NothingToEvaluate, evaluate
    from nodecast.machines import load_machine
    from nodecast.traces.load import load_trace

    models: list[str] = []
    rows: list[list[str]] = []
    notes: list[str] = []
    for label, a_name, b_name, src, dst in PAIRS:
        a, b = load_trace(folder / a_name), load_trace(folder / b_name)
        for (x, y), (m_from, m_to), arrow in (((a, b), (src, dst), "A→B"), ((b, a), (dst, src), "B→A")):
            source, target = load_machine(m_from), load_machine(m_to)
            ev = evaluate(x, y, source, target, kind="transfer")
            table = ev.table().set_index("model")
            if not models:
                models = list(table.index)
            kinds = [c for c in table.columns if c not in ("MAPE", "ops")]
            counts = {k: int((ev.category == k).sum()) for k in kinds if k != "all"}
            counts["all"] = len(ev.actual_s)
            for kind in ["all", *sorted(k for k in kinds if k != "all")]:
                if kind == "all" and len(kinds) == 2:
                    continue  # one kind: its row is the 'all' row
                rows.append([label, f"{arrow} {m_from}→{m_to}", kind, f"{counts[kind]:,}",
                             *(_pct(float(table.loc[m, kind])) for m in models)])
            for note in ev.notes:
                if "host copy rate" in note or "pageable copies: staged" in note:
                    notes.append(f"{label} {arrow}: {note}")
    for a_name, b_name, machine in UNPAIRED:
        try:
            evaluate(load_trace(folder / a_name), load_trace(folder / b_name), load_machine(machine),
                     load_machine(machine), kind="transfer")
        except NothingToEvaluate as exc:
            notes.append(f"not in the table: {a_name} / {b_name}: {exc.reason.split('; the ')[0]}")
    return models, rows, list(dict.fromkeys(notes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=TRACES, help="folder of the shared traces")
    args = parser.parse_args()
    models, rows, notes = evaluate_pairs(args.traces)
    head = ["pair", "direction", "kind", "copies", *models]
    print("WMAPE (%) per pair, copy kind and model; 'unchanged' keeps A's time; scaled = A's time x model B/A")
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if i < 3 else "---:" for i in range(len(head))) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()
    for note in notes:
        print(f"- {note}")


if __name__ == "__main__":
    main()
