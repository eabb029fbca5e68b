"""Hierarchical roofline model (``models.roofline`` and its ``roofline_figures``, ``roofline_equations``): eqs. 1-10
worked by hand, GPU figures, the Model protocol, properties, tensor cores; every kernel model over the real V100
set is ``tests/cost/test_kernels.py``."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodecast.errors import InputError
from nodecast.machines.loader import machine_from_dict
from nodecast.models.base import Model
from nodecast.models.registry import model_names
from nodecast.models.roofline import RooflineModel
from nodecast.models.roofline_equations import KernelInputs, ceilings, project_kernels
from nodecast.models.roofline_figures import PAPER_TABLE1, gpu_figures, measured_gpu_toml
from nodecast.traces.kinds import OpKind
from nodecast.traces.ncu import FLOP_OPS, PRECISION_LETTER, KernelMetrics, trace_from_metrics
from nodecast.traces.trace import Trace


def machine(name: str, model: str, peaks: dict[str, float], levels: dict[str, float],
            measured: dict | None = None) -> object:
    """A one-GPU machine; ``peaks`` are FMA peaks (ADD/MUL = half), ``levels`` data-sheet bandwidths."""
    data = {
        "schema_version": 1, "name": name, "description": f"test machine {name}",
        "cpu": {"model": "test cpu", "sockets": 1, "cores_per_socket": 8, "clock_hz": 2e9,
                "memory_bytes": 64e9, "memory_bandwidth_bps": 100e9},
        "gpu": {"model": model, "count": 1, "sms": 80, "clock_hz": 1.53e9, "memory_bytes": 16e9,
                "peak_flops": {p: {"fma": v, "addmul": v / 2} for p, v in peaks.items()},
                "levels": {lv: {"bandwidth_bps": bw} for lv, bw in levels.items()}},
        "links": [{"id": "pcie0", "kind": "pcie", "endpoints": ["cpu0", "gpu0"], "gen": 3, "lanes": 16}],
    }
    if measured is not None:
        data["measured"] = measured
    return machine_from_dict(data, f"{name}.toml")


def table1(gpu: str) -> dict:
    """The [measured] table with Table 1's values for ``gpu``, parsed from measured_gpu_toml."""
    return tomllib.loads(measured_gpu_toml(gpu))["measured"]


# V100-SXM2 and H100-SXM5 data sheets (DATASHEETS.md D.1) with Table 1's measured maxima.
V100 = machine("v100", "V100", {"fp64": 7.8e12, "fp32": 15.7e12, "fp16": 31.4e12}, {"dram": 900e9}, table1("V100"))
H100 = machine("h100", "H100", {"fp64": 33.5e12, "fp32": 66.9e12, "fp16": 133.8e12}, {"dram": 3.35e12},
               table1("H100"))
H100_SHEET = machine("h100-sheet", "H100", {"fp64": 33.5e12, "fp32": 66.9e12}, {"dram": 3.35e12})


def metrics(rows: list[dict]) -> KernelMetrics:
    """A metrics table from partial rows (absent counts 0, absent optional metrics NaN)."""
    full = []
    for i, r in enumerate(rows):
        row = {"kernel": r.get("kernel", f"k{i}"), "occurrence": 0, "id": i, "duration_s": r["duration_s"]}
        for p in PRECISION_LETTER:
            for o in FLOP_OPS:
                row[f"{p}_{o}_inst"] = r.get(f"{p}_{o}_inst", 0.0)
        for c in ("l1_bytes", "l2_bytes", "dram_bytes"):
            row[c] = r.get(c, 0.0)
        for c in ("shared_bytes", "shared_wavefronts", "shared_bank_conflicts", "threads_per_inst", "tensor_inst"):
            row[c] = r.get(c, math.nan)
        full.append(row)
    df = pd.DataFrame(full)
    df["occurrence"] = df.groupby("kernel").cumcount()
    return KernelMetrics(df, ["test"], frozenset())


# The hand-worked kernel: 1 ms on the V100, 1e8 DFMA (2e8 FLOP), bytes traversing L1/L2/DRAM 1.6e9/8e8/4e8,
# so 8e8 B hit L1, 4e8 B hit L2, 4e8 B come from DRAM; full warps.
HAND = {"duration_s": 1e-3, "fp64_fma_inst": 1e8, "l1_bytes": 1.6e9, "l2_bytes": 8e8, "dram_bytes": 4e8}


def test_eq2_eq3_op_mix_and_warp_usage():
    """Eq. 2 weights the FMA and ADD/MUL peaks by the op mix, eq. 3 scales by active threads / 32."""
    # FP32 on the V100 data sheet: P_FMA = 15.7 TFLOP/s, P_ADDMUL = 7.85 TFLOP/s; 6e6 FFMA, 3e6 FADD, 1e6 FMUL:
    # Perf_mix = 15.7e12 * 6/10 + 7.85e12 * 4/10 = 9.42e12 + 3.14e12 = 12.56e12 FLOP/s;
    # 24 active threads: Perf_ceil = 24/32 * 12.56e12 = 9.42e12 FLOP/s.
    km = metrics([{"duration_s": 1e-3, "fp32_fma_inst": 6e6, "fp32_add_inst": 3e6, "fp32_mul_inst": 1e6,
                   "threads_per_inst": 24.0, "dram_bytes": 1e6, "l2_bytes": 1e6, "l1_bytes": 1e6}])
    inp = KernelInputs.from_metrics(km)
    c = ceilings(inp, inp.inst, gpu_figures(V100))
    assert c.perf_mix[0] == pytest.approx(12.56e12)
    assert c.perf_ceil[0] == pytest.approx(9.42e12)
    # FLOP = 2*6e6 + 3e6 + 1e6 = 16e6; t_compute = 16e6 / 9.42e12 = 1.69851e-6 s
    assert c.t_compute[0] == pytest.approx(16e6 / 9.42e12)


def test_mixed_precisions_combine_as_harmonic_mean():
    """A kernel with FP64 and FP32 work gets the FLOP-weighted harmonic mean of the per-precision ceilings."""
    # V100 measured FP64 FMA 6.89e12 (Table 1) with 1e6 DFMA = 2e6 FLOP -> 2.90276e-7 s;
    # FP32 data sheet FMA 15.7e12 with 1e6 FFMA = 2e6 FLOP -> 1.27389e-7 s; total 4e6 FLOP in 4.17665e-7 s
    # -> Perf_ceil = 4e6 / 4.17665e-7 = 9.57702e12 FLOP/s.
    km = metrics([{"duration_s": 1e-3, "fp64_fma_inst": 1e6, "fp32_fma_inst": 1e6, "dram_bytes": 1.0}])
    inp = KernelInputs.from_metrics(km)
    c = ceilings(inp, inp.inst, gpu_figures(V100))
    assert c.perf_ceil[0] == pytest.approx(4e6 / (2e6 / 6.89e12 + 2e6 / 15.7e12))


def test_eq4_to_eq8_bandwidth_ceilings_by_hand():
    """Per-level times (eq. 4) and the weighted-harmonic bandwidth ceilings (eqs. 6-8) on the V100 of Table 1."""
    # t_DRAM = 4e8/846e9 = 4.72813e-4 s; t_L2 = 4e8/2460e9 = 1.62602e-4 s; t_L1 = 8e8/13963e9 = 5.72943e-5 s
    # BWceil_DRAM = 846 GB/s (eq. 8); BWceil_L2 = 8e8/(1.62602e-4+4.72813e-4) = 1259.02 GB/s (eq. 7);
    # BWceil_L1 = 1.6e9/(5.72943e-5+1.62602e-4+4.72813e-4) = 2309.77 GB/s (eq. 6).
    inp = KernelInputs.from_metrics(metrics([HAND]))
    c = ceilings(inp, inp.inst, gpu_figures(V100))
    assert c.t_level["dram"][0] == pytest.approx(4.72813e-4, rel=1e-5)
    assert c.t_level["l2"][0] == pytest.approx(1.62602e-4, rel=1e-5)
    assert c.t_level["l1"][0] == pytest.approx(5.72943e-5, rel=1e-5)
    assert c.bw_ceil["dram"][0] == pytest.approx(846e9)
    assert c.bw_ceil["l2"][0] == pytest.approx(1259.02e9, rel=1e-5)
    assert c.bw_ceil["l1"][0] == pytest.approx(2309.77e9, rel=1e-5)


def test_eq5_shared_memory_bank_efficiency():
    """Eq. 5: 1.28e8 shared bytes in 2e6 wavefronts (64 B/cycle, half the banks) take twice the conflict-free time."""
    # t_shm = N/N_pc * 128/BW = 1.28e8/64 * 128/13963e9 = 2e6 * 128 / 13963e9 = 1.83342e-5 s (BW_shm = BW_L1)
    row = dict(HAND, shared_bytes=1.28e8, shared_wavefronts=2e6)
    inp = KernelInputs.from_metrics(metrics([row]))
    c = ceilings(inp, inp.inst, gpu_figures(V100))
    assert c.t_level["shared"][0] == pytest.approx(1.83342e-5, rel=1e-5)
    free = dict(HAND, shared_bytes=1.28e8)  # no wavefront count: conflict-free, 1.28e8/13963e9 = 9.16708e-6 s
    inp2 = KernelInputs.from_metrics(metrics([free]))
    assert ceilings(inp2, inp2.inst, gpu_figures(V100)).t_level["shared"][0] == pytest.approx(9.16708e-6, rel=1e-5)


def test_eq9_interval_and_mean_by_hand():
    """Eq. 9 from the V100 to the H100 of Table 1: the DRAM, L2 and L1 projections and their interval."""
    # Source efficiencies (roofline time / measured time; all memory-bound, t_compute = 2e8/6.89e12 = 2.90e-5 s):
    #   DRAM 4.72813e-4/1e-3 = 0.472813; L2 6.35415e-4/1e-3 = 0.635415; L1 6.92709e-4/1e-3 = 0.692709.
    # Target roofline times: DRAM 4e8/1907e9 = 2.09754e-4; L2 + 4e8/7758e9 -> 2.61313e-4; L1 + 8e8/25330e9 -> 2.92896e-4.
    # Projected: DRAM 2.09754e-4/0.472813 = 0.443629 ms (= 1 ms x 846/1907); L2 0.411248 ms; L1 0.422827 ms.
    # In performance (eq. 9 as written): Perf_s = 2e8/1e-3 = 2e11; OI_DRAM = 0.5: roofline_s = 423e9,
    # roofline_t = 953.5e9 -> Perf_t = 2e11/423e9*953.5e9 = 450.83 GFLOP/s -> 2e8/450.83e9 = 0.443629 ms.
    # Interval [0.411248, 0.443629] ms; midpoint of the performance interval (486.32 + 450.83)/2 = 468.58 GFLOP/s
    # -> 2e8 / 468.58e9 = 0.426825 ms.
    proj = project_kernels(KernelInputs.from_metrics(metrics([HAND])), gpu_figures(V100),
                           gpu_figures(H100, reference=V100))
    assert proj.efficiency["dram"][0] == pytest.approx(0.472813, rel=1e-5)
    assert proj.time_level["dram"][0] == pytest.approx(0.443629e-3, rel=1e-5)
    assert proj.time_level["l2"][0] == pytest.approx(0.411248e-3, rel=1e-5)
    assert proj.time_level["l1"][0] == pytest.approx(0.422827e-3, rel=1e-5)
    assert proj.low_s[0] == pytest.approx(0.411248e-3, rel=1e-5)
    assert proj.high_s[0] == pytest.approx(0.443629e-3, rel=1e-5)
    assert proj.time_s[0] == pytest.approx(0.426825e-3, rel=1e-5)
    assert proj.perf_level()["dram"][0] == pytest.approx(450.83e9, rel=1e-5)
    assert proj.bound_t[0] == "dram"


def test_eq10_operational_intensities():
    """OI per level is FLOP over the bytes traversing that level: 2e8/1.6e9, 2e8/8e8, 2e8/4e8."""
    proj = project_kernels(KernelInputs.from_metrics(metrics([HAND])), gpu_figures(V100), gpu_figures(H100))
    assert proj.oi_s["l1"][0] == pytest.approx(0.125)
    assert proj.oi_s["l2"][0] == pytest.approx(0.25)
    assert proj.oi_s["dram"][0] == pytest.approx(0.5)


def test_compute_bound_kernel_scales_with_the_compute_ceiling():
    """A compute-bound kernel (high OI) projects by the ratio of the compute ceilings."""
    # 1e11 DFMA = 2e11 FLOP with 4e8 DRAM bytes: t_c = 2e11/6.89e12 = 2.90276e-2 s >> t_DRAM; T_s = 50 ms.
    # efficiency = 2.90276e-2/5e-2 = 0.580552; target 2e11/24.979e12 = 8.00673e-3 s -> 13.7917 ms for all levels.
    row = {"duration_s": 50e-3, "fp64_fma_inst": 1e11, "l1_bytes": 4e8, "l2_bytes": 4e8, "dram_bytes": 4e8}
    proj = project_kernels(KernelInputs.from_metrics(metrics([row])), gpu_figures(V100), gpu_figures(H100))
    assert proj.low_s[0] == pytest.approx(13.7917e-3, rel=1e-5)
    assert proj.high_s[0] == pytest.approx(13.7917e-3, rel=1e-5)
    assert proj.bound_t[0] == "compute"


def test_kernel_without_flop_projects_as_memory_bound():
    """A fill kernel (no FLOP) takes the DRAM-bound limit of eq. 9: source time x 846/1907."""
    row = {"duration_s": 3e-6, "l1_bytes": 1e6, "l2_bytes": 1e6, "dram_bytes": 1e6}
    proj = project_kernels(KernelInputs.from_metrics(metrics([row])), gpu_figures(V100), gpu_figures(H100))
    assert proj.time_s[0] == pytest.approx(3e-6 * 846 / 1907)
    assert math.isnan(proj.perf_level()["dram"][0])


def test_efficiency_above_one_is_capped_with_a_note():
    """A kernel faster than its own ceiling projects exactly onto the target's roofline, and a note says so."""
    row = dict(HAND, duration_s=1e-4)  # 4e8 B from DRAM in 0.1 ms = 4 TB/s > 846 GB/s
    proj = project_kernels(KernelInputs.from_metrics(metrics([row])), gpu_figures(V100), gpu_figures(H100))
    assert proj.efficiency["dram"][0] > 1
    assert proj.time_level["dram"][0] == pytest.approx(4e8 / 1907e9)
    assert any("capped at 1" in n for n in proj.notes)
    assert any(n.startswith("1 of 1 launch ran faster") for n in proj.notes)


# -- GPU figures ---------------------------------------------------------------------------------
def test_figures_prefer_measured_then_scaled_data_sheet():
    """Measured maxima win; a target without them gets its data sheet x the source's measured/peak ratio."""
    src = gpu_figures(V100)
    assert src.bandwidth["dram"] == 846e9 and src.fma["fp64"] == 6890e9
    assert src.fma["fp32"] == 15.7e12 and src.origin["fma.fp32"] == "data sheet"
    assert src.bandwidth["shared"] == src.bandwidth["l1"]
    tgt = gpu_figures(H100_SHEET, reference=V100)
    # DRAM 3.35e12 x 846/900 = 3.149e12 B/s; FP64 33.5e12 x 6.89/7.8 = 29.5917e12 FLOP/s; FP32: no ratio (1)
    assert tgt.bandwidth["dram"] == pytest.approx(3.149e12)
    assert tgt.fma["fp64"] == pytest.approx(29.5917e12, rel=1e-5)
    assert tgt.fma["fp32"] == 66.9e12
    assert "measured/peak 0.940" in tgt.origin["bw.dram"]
    assert "l2" not in tgt.bandwidth  # neither measured nor on the data sheet


def test_target_without_cache_figures_projects_between_the_neighbouring_levels():
    """A GPU with no L2 and no L1 figure still projects: each unknown level is bounded by its neighbours (no slower
    than the level outside it, no faster than the one inside it, unbounded when none is), the interval covers both
    ends, and a note says so. A missing compute peak stays one error, whose hint does not send the user into a
    shipped file."""
    inp = KernelInputs.from_metrics(metrics([HAND]))
    src, tgt = gpu_figures(V100), gpu_figures(H100_SHEET, reference=V100)
    proj = project_kernels(inp, src, tgt)
    # Slow end: L2 and L1 at the DRAM figure 3.149e12 (3.35e12 x 846/900): the target roofline times are
    # DRAM 4e8/3.149e12 = 1.27024e-4 s, L2 8e8/3.149e12 = 2.54049e-4 s, L1 1.6e9/3.149e12 = 5.08098e-4 s; divided by
    # the source efficiencies of test_eq9 (0.472813, 0.635415, 0.692709): 0.268656, 0.399816, 0.733497 ms.
    # Fast end: L2 and L1 free, every level's time is the DRAM one: 1.27024e-4 / 0.692709 = 0.183374 ms.
    assert proj.high_s[0] == pytest.approx(0.733497e-3, rel=1e-5)
    assert proj.low_s[0] == pytest.approx(0.183374e-3, rel=1e-5)
    assert proj.low_s[0] <= proj.time_s[0] <= proj.high_s[0]
    unknown = [n for n in proj.notes if "bandwidth unknown for H100" in n]
    assert [n[:3] for n in unknown] == ["L2 ", "L1 "] and all("interval widened" in n for n in unknown)
    fp16 = metrics([dict(HAND, fp16_fma_inst=1e6)])
    with pytest.raises(InputError, match=r"gpu\.peak_flops\.fp16") as exc:
        project_kernels(KernelInputs.from_metrics(fp16), gpu_figures(V100),
                        gpu_figures(machine("x", "X", {"fp64": 1e12}, {"dram": 1e12, "l2": 2e12, "l1": 4e12})))
    assert "\n" not in exc.value.message and "nodecast machines template" in exc.value.hint


def _h200_node(folder: Path, sheet_text: str) -> object:
    """A one-GPU node of the H200 data sheet ``sheet_text`` (written to ``folder``), composed as ``h200-sxm-141gb``."""
    from nodecast.machines.compose import parse_spec, spec_machine_dict

    folder.mkdir()
    sheet = folder / "h200-sxm-141gb.toml"
    sheet.write_text(sheet_text)
    data, _ = spec_machine_dict(parse_spec("h200-sxm-141gb"))
    data["gpu"]["sheet"] = str(sheet)
    return machine_from_dict(data, folder / "node.toml")


def test_sheet_without_l2_bandwidth_projects_with_a_note_and_a_wider_interval(tmp_path):
    """The H200 data sheet with its L2 bandwidth, and the same sheet without it: both project the hand kernel from
    the V100 of Table 1; without, a note names the unknown level and the interval contains and exceeds the one
    with it."""
    from nodecast.machines.sheets import gpus_dir

    text = (gpus_dir() / "h200-sxm-141gb.toml").read_text()
    lines = text.splitlines(keepends=True)
    assert any(ln.startswith("l2_bandwidth_bps") for ln in lines)
    with_l2 = _h200_node(tmp_path / "with", text)
    without = _h200_node(tmp_path / "without", "".join(ln for ln in lines if not ln.startswith("l2_bandwidth_bps")))
    inp = KernelInputs.from_metrics(metrics([HAND]))
    a = project_kernels(inp, gpu_figures(V100), gpu_figures(with_l2, reference=V100))
    b = project_kernels(inp, gpu_figures(V100), gpu_figures(without, reference=V100))
    assert not any("bandwidth unknown" in n for n in a.notes)
    assert any("L2 bandwidth unknown for NVIDIA H200 SXM 141GB" in n for n in b.notes)
    assert b.low_s[0] <= a.low_s[0] and a.high_s[0] <= b.high_s[0]
    assert b.high_s[0] - b.low_s[0] > 1.5 * (a.high_s[0] - a.low_s[0])


def test_published_sheet_measurements_are_the_maxima_of_the_sheets_product():
    """A node composed from the V100 PCIe 16GB sheet takes the sheet's published L2/L1 maxima as measured; the
    Euro-Par V100 server's own Table 1 wins over them; a machine file that changes the clock, or gives the level
    itself, describes another GPU and keeps the data-sheet figure; a target's ratio uses the published maxima."""
    from dataclasses import replace

    from nodecast.machines import load_machine

    composed = gpu_figures(load_machine("v100-pcie-16gb"))
    assert (composed.bandwidth["l2"], composed.bandwidth["l1"]) == (2.482e12, 13.667e12)
    assert composed.origin["bw.l2"] == "published measurement, data sheet v100-pcie-16gb"
    assert composed.bandwidth["dram"] == 900e9 and composed.origin["bw.dram"] == "data sheet"
    server = gpu_figures(load_machine("v100-pcie-server"))
    assert server.bandwidth["l2"] == 2460e9 and server.origin["bw.l2"].startswith("measured, Van Lanker")
    node = load_machine("v100-pcie-16gb")
    slower = replace(node, gpu=replace(node.gpu, clock_hz=1.2e9))
    assert gpu_figures(slower).bandwidth["l2"] == pytest.approx(2.82624e12)
    scaled = gpu_figures(load_machine("h200-sxm-141gb"), reference=node)
    assert scaled.bandwidth["l2"] == pytest.approx(10.1376e12 * 2.482 / 2.82624)


def test_measured_gpu_toml_loads_with_table1_values():
    """The generated [measured.gpu] blocks load through the machine loader with Table 1's numbers."""
    for gpu, row in PAPER_TABLE1.items():
        m = machine("t", gpu, {"fp64": 1e13}, {"dram": 1e12}, table1(gpu)).measured
        assert m.gpu_origin == "Van Lanker et al., Euro-Par 2024, Table 1"
        assert m.gpu_peak_flops["fp64"].fma == row["perf_max_flops"]
        assert m.gpu_level_bandwidth_bps == {"dram": row["dram_bps"], "l2": row["l2_bps"], "l1": row["l1_bps"]}


# -- the Model protocol -------------------------------------------------------------------------------
def test_model_is_registered_and_follows_the_protocol():
    """`roofline` is a registered kernel model implementing the Model protocol."""
    assert "roofline" in model_names("kernel")
    m = RooflineModel()
    assert isinstance(m, Model) and m.kind == "kernel" and not m.baseline


def test_model_projects_kernel_rows_only():
    """Kernel ops with metrics get times and intervals; a memcpy stays NaN; without metrics nothing is accepted."""
    km = metrics([HAND, dict(HAND, kernel="k0", duration_s=2e-3)])
    km.table["kernel"] = "k0"
    km.table["occurrence"] = [0, 1]
    trace = Trace.from_columns({"kind": [OpKind.KERNEL, OpKind.MEMCPY, OpKind.KERNEL],
                                "start_ns": [0, 10, 20], "end_ns": [5, 15, 25], "name_id": [0, -1, 0]}, ["k0"])
    res = RooflineModel(km).project(trace, V100, H100)
    assert np.isnan(res.time_s[1])
    assert res.time_s[0] == pytest.approx(0.426825e-3, rel=1e-5)
    assert res.time_s[2] > res.time_s[0]
    assert np.all(res.low_s[[0, 2]] <= res.time_s[[0, 2]]) and np.all(res.time_s[[0, 2]] <= res.high_s[[0, 2]])
    assert any("equal instruction counts assumed" in n for n in res.notes)
    assert not RooflineModel().accepts(trace).any()


# -- properties ------------------------------------------------------------------------------------------
counts = st.floats(min_value=0, max_value=1e12, allow_nan=False)
bytes_ = st.floats(min_value=0, max_value=1e12, allow_nan=False)


@st.composite
def kernels(draw):
    """A random launch: op counts, bytes, shared traffic, warp usage, duration."""
    row = {"duration_s": draw(st.floats(min_value=1e-7, max_value=10.0))}
    for p in ("fp64", "fp32"):
        for o in FLOP_OPS:
            row[f"{p}_{o}_inst"] = draw(counts)
    row["l1_bytes"], row["l2_bytes"], row["dram_bytes"] = draw(bytes_), draw(bytes_), draw(bytes_)
    if draw(st.booleans()):
        row["shared_bytes"] = draw(bytes_)
        row["shared_wavefronts"] = row["shared_bytes"] / draw(st.floats(min_value=4, max_value=128))
    row["threads_per_inst"] = draw(st.floats(min_value=1, max_value=32))
    return row


@st.composite
def gpus(draw):
    """A random GPU with every figure the model needs."""
    def f(lo, hi):
        return draw(st.floats(min_value=lo, max_value=hi))
    return machine("g", "G", {"fp64": f(1e11, 1e14), "fp32": f(1e11, 1e14)},
                   {"dram": f(1e10, 1e13), "l2": f(1e10, 1e14), "l1": f(1e10, 1e14)})


@settings(max_examples=150, deadline=None)
@given(st.lists(kernels(), min_size=1, max_size=6), gpus(), gpus())
def test_projection_never_exceeds_the_target_ceiling(rows, src, tgt):
    """At every level the projected performance is at most the target's roofline with ceilings, and <= Perf_ceil."""
    proj = project_kernels(KernelInputs.from_metrics(metrics(rows)), gpu_figures(src), gpu_figures(tgt))
    perf = proj.perf_level()
    for lv in ("l1", "l2", "dram"):
        ok = np.isfinite(perf[lv])
        with np.errstate(all="ignore"):
            roof = np.minimum(proj.ceil_t.bw_ceil[lv] * proj.oi_t[lv], proj.ceil_t.perf_ceil)
        roof = np.where(np.isfinite(roof), roof, proj.ceil_t.perf_ceil)
        assert np.all(perf[lv][ok] <= roof[ok] * (1 + 1e-9))
        assert np.all(perf[lv][ok] <= proj.ceil_t.perf_ceil[ok] * (1 + 1e-9))


@settings(max_examples=150, deadline=None)
@given(st.lists(kernels(), min_size=1, max_size=6), gpus(), gpus())
def test_interval_brackets_its_mean(rows, src, tgt):
    """low <= mean <= high for every launch, all positive and finite."""
    proj = project_kernels(KernelInputs.from_metrics(metrics(rows)), gpu_figures(src), gpu_figures(tgt))
    assert np.all(np.isfinite(proj.time_s)) and np.all(proj.low_s > 0)
    assert np.all(proj.low_s <= proj.time_s * (1 + 1e-12))
    assert np.all(proj.time_s <= proj.high_s * (1 + 1e-12))


@settings(max_examples=100, deadline=None)
@given(kernels(), gpus(), gpus())
def test_time_domain_equals_eq9_as_written(row, src, tgt):
    """The time-domain computation equals eq. 9 in FLOP/s whenever the kernel has FLOP and stays under its ceilings."""
    proj = project_kernels(KernelInputs.from_metrics(metrics([row])), gpu_figures(src), gpu_figures(tgt))
    flop = proj.flop_s[0]
    if flop <= 0:
        return
    for lv in ("l1", "l2", "dram"):
        if not np.isfinite(proj.oi_s[lv][0]) or proj.efficiency[lv][0] > 1:
            continue
        # A huge intensity times a bandwidth may overflow to inf: the compute ceiling is then the minimum, as intended.
        with np.errstate(over="ignore"):
            rs = min(proj.ceil_s.bw_ceil[lv][0] * proj.oi_s[lv][0], proj.ceil_s.perf_ceil[0])
            rt = min(proj.ceil_t.bw_ceil[lv][0] * proj.oi_t[lv][0], proj.ceil_t.perf_ceil[0])
        perf_t = proj.perf_s[0] / rs * rt
        assert flop / perf_t == pytest.approx(proj.time_level[lv][0], rel=1e-9)


# -- tensor cores (issue 11): sm__inst_executed_pipe_tensor > 0 at the tensor peak of the kernel's precision ------

def _tensor_metrics(tensor_inst: float, name: str = "volta_h884gemm_64x64_ldg8_nn") -> KernelMetrics:
    """One launch of 1 ms, 1 MB of DRAM traffic and ``tensor_inst`` tensor-pipe instructions (no vector FLOP)."""
    row = {"kernel": name, "occurrence": 0, "id": 0, "duration_s": 1e-3, "l1_bytes": 1e6, "l2_bytes": 1e6,
           "dram_bytes": 1e6, "threads_per_inst": math.nan, "tensor_inst": tensor_inst}
    for p in PRECISION_LETTER:
        for o in FLOP_OPS:
            row[f"{p}_{o}_inst"] = 0.0
    return KernelMetrics(pd.DataFrame([row]), ["test"], frozenset())


def test_tensor_launch_is_computed_at_the_tensor_peak():
    """1e6 HMMA.884 on a V100 (512 FLOP each, 5.12e11 FLOP: 4.1 ms at 125 TFLOP/s, far above its 1 MB of DRAM)
    is compute-bound on both GPUs: it projects by the FP16 tensor peak ratio (it was projected by DRAM alone,
    its tensor work counted as no work at all)."""
    from nodecast.machines import load_machine

    v100, a100 = load_machine("v100-sxm2-16gb"), load_machine("a100-sxm4-40gb")
    km = _tensor_metrics(1e6)
    res = RooflineModel(km).project(trace_from_metrics(km), v100, a100)
    ratio = v100.gpu.peak_flops_per_s("fp16_tensor") / a100.gpu.peak_flops_per_s("fp16_tensor")
    assert res.time_s[0] == pytest.approx(1e-3 * ratio, rel=1e-9)
    assert any("512 FLOP each on sm_70" in n and "FP16_TENSOR" in n for n in res.notes)


def test_tensor_launch_on_unknown_architecture_scales_by_the_peak_ratio():
    """On a source whose FLOP per tensor instruction nodecast does not know (sm_80), the launch is projected
    compute-bound at the tensor peak ratio of the precision its name says (BF16 here), and said so."""
    from nodecast.machines import load_machine

    a100, h100 = load_machine("a100-sxm4-40gb"), load_machine("h100-sxm5-80gb")
    km = _tensor_metrics(1e6, name="cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8")
    res = RooflineModel(km).project(trace_from_metrics(km), a100, h100)
    ratio = a100.gpu.peak_flops_per_s("bf16_tensor") / h100.gpu.peak_flops_per_s("bf16_tensor")
    assert res.time_s[0] == pytest.approx(1e-3 * ratio, rel=1e-12)
    assert res.low_s[0] == res.high_s[0] == res.time_s[0]
    assert any("does not know on sm_80" in n for n in res.notes)
