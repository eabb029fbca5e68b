"""Kernel errors of an evaluation (aligned launches and totals) and many pairs of traces at once."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.workflows.evaluate import evaluate, kernel_table
from nodecast.workflows.evaluate_kernels import evaluate_pairs, pair_files
from nodecast.machines import load_machine
from nodecast.traces.load import load_trace

ZOO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "kernel-zoo"
MODELS = ["wave-scaling", "dram-ratio", "flops-ratio"]


def zoo(gpu: str, name: str) -> Path:
    """A kernel-zoo file; skips when the kernel zoo is absent."""
    if not ZOO.is_dir():
        pytest.skip(f"{ZOO} is absent")
    return ZOO / gpu / name


def test_kernel_table_by_hand_on_a_real_pair():
    """bitonic on the TITAN projected onto the K20c: 210 launches align by name; MAPE, WMAPE and the totals are
    the formulas applied to the aligned launches and to every kernel of each run."""
    a, b = load_trace(zoo("Titan", "bitonic-1048576.csv")), load_trace(zoo("Tesla-K20", "bitonic-1048576.csv"))
    ev = evaluate(a, b, load_machine("gtx-titan"), load_machine("tesla-k20c"), MODELS)
    t = kernel_table(ev).set_index("model")
    ka, kb = a["kind"] == 0, b["kind"] == 0
    actual = b.duration_ns[kb] * 1e-9
    projected = ev.projection.results["wave-scaling"].time_s[ka]
    assert t.loc["wave-scaling", "launches"] == 210 == ka.sum()
    assert t.loc["wave-scaling", "MAPE"] == pytest.approx(np.mean(100 * np.abs(projected - actual) / actual))
    assert t.loc["wave-scaling", "WMAPE"] == pytest.approx(100 * np.abs(projected - actual).sum() / actual.sum())
    assert t.loc["wave-scaling", "projected_s"] == pytest.approx(projected.sum())
    assert t.loc["unchanged", "projected_s"] == pytest.approx(a.duration_ns[ka].sum() * 1e-9)
    assert t.loc["dram-ratio", "total_error"] == pytest.approx(
        100 * abs(t.loc["dram-ratio", "projected_s"] - actual.sum()) / actual.sum())


def test_cross_vendor_kernels_compare_as_totals(shared_traces):
    """H100 -> MI300X: kernel names mostly differ, but the op class and shape of the aten op that launched each
    kernel (record_shapes) pair 150 launches (all but the convolution's 4 and 5 kernels, which carry no shape), and
    the totals cover every kernel of both runs (154 on the H100, 155 on the MI300X)."""
    a = load_trace(shared_traces / "kineto_nsfw-image-detection_h100.json.gz")
    b = load_trace(shared_traces / "kineto_nsfw-image-detection_mi300x.json.gz")
    ev = evaluate(a, b, load_machine("h100-sxm5-80gb"), load_machine("mi300x"), ["wave-scaling"])
    t = kernel_table(ev).set_index("model")
    assert t.loc["wave-scaling", "launches"] == 150
    assert t.loc["wave-scaling", "actual_s"] == pytest.approx(b.duration_ns[b["kind"] == 0].sum() * 1e-9)
    assert t.loc["wave-scaling", "projected_s"] == pytest.approx(
        np.nansum(ev.projection.results["wave-scaling"].time_s))


def test_pairs_by_file_name_and_pooled_wmape(tmp_path):
    """Two folders: files paired by name, those in one folder only listed, errors pooled over all pairs as
    100 x sum|A - P| / sum A (not a mean of per-pair figures)."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    for name in ("vectorAdd-1048576.csv", "subSeqMax-1048576.csv"):
        shutil.copy(zoo("Titan", name), a / name)
        shutil.copy(zoo("GTX-970", name), b / name)
    shutil.copy(zoo("GTX-970", "dotProd-1048576.csv"), b / "dotProd-1048576.csv")
    result = evaluate_pairs(a, b, model_names=MODELS)
    assert [o.name for o in result.evaluated] == ["subSeqMax-1048576.csv", "vectorAdd-1048576.csv"]
    assert result.unpaired_a == [] and result.unpaired_b == ["dotProd-1048576.csv"]
    assert {o.source for o in result.evaluated} == {"gtx-titan@xeon-platinum-8480c-2s"}  # picked from the traces
    e = result.errors()
    k = e[(e["category"] == "kernel") & (e["model"] == "wave-scaling")]
    pooled = result.pooled().set_index(["model", "category"]).loc[("wave-scaling", "kernel")]
    assert pooled["WMAPE"] == pytest.approx(100 * k["abs_error_s"].sum() / k["actual_s"].sum())
    assert pooled["pairs"] == 2 and pooled["ops"] == 2
    summary = result.summary("kernel").set_index("pair")
    assert summary.loc["all pairs", "wave-scaling"] == pytest.approx(pooled["WMAPE"])


def test_a_pair_that_cannot_be_evaluated_does_not_stop_the_others(tmp_path):
    """A pair whose GPU is not the named --from machine's keeps its reason; the other pairs are evaluated."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    shutil.copy(zoo("Titan", "vectorAdd-1048576.csv"), a / "x.csv")
    shutil.copy(zoo("GTX-970", "vectorAdd-1048576.csv"), b / "x.csv")
    shutil.copy(zoo("GTX-680", "vectorAdd-1048576.csv"), a / "y.csv")
    shutil.copy(zoo("GTX-970", "vectorAdd-1048576.csv"), b / "y.csv")
    result = evaluate_pairs(a, b, source="gtx-titan", model_names=MODELS)
    by_name = {o.name: o for o in result.outcomes}
    assert by_name["x.csv"].evaluation is not None
    assert by_name["y.csv"].evaluation is None and "GTX 680" in by_name["y.csv"].reason


def test_folders_without_a_common_name_are_refused(tmp_path):
    """Two folders that share no file name, or a path that is not a folder, are one clear error."""
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.csv").write_text("")
    (tmp_path / "b" / "y.csv").write_text("")
    with pytest.raises(InputError, match="no file name is in both folders"):
        pair_files(tmp_path / "a", tmp_path / "b")
    with pytest.raises(InputError, match="not a folder"):
        pair_files(tmp_path / "a", tmp_path / "missing")
