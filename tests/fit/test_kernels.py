"""Fitting the learned kernel model: pairs, ridge fit, leave-one-GPU-out, the parameter file."""

import json

import numpy as np
import pandas as pd
import pytest

from nodecast.errors import InputError
from nodecast.fit import corpus, kernels
from nodecast.fit.workflow import fit_kernel_model
from nodecast.machines.sheets import load_sheet
from nodecast.models.kernel_family import Family
from nodecast.models.kernel_features import PEAK_KEYS, figures_of_sheet
from nodecast.models.kernel_learned import load_params

GPUS = ("t4", "v100-pcie-32gb", "a100-pcie-40gb", "p100-pcie-16gb")


def _synthetic(n: int = 300, seed: int = 1) -> tuple[pd.DataFrame, dict]:
    """Elementwise ops whose time on every GPU is bytes / (0.8 x its DRAM bandwidth) + 3 µs: a law the model
    must learn (DRAM-bound) from data sheets it did not see the GPU of."""
    rng = np.random.default_rng(seed)
    figures = {g: figures_of_sheet(load_sheet(g)) for g in GPUS}
    size = rng.uniform(1e6, 1e9, n)
    rows = []
    for g in GPUS:
        t = size / (0.8 * figures[g].dram_bps) + 3e-6
        rows.append(pd.DataFrame({"corpus": "synthetic", "key": [f"op{i}" for i in range(n)], "gpu": g,
                                  "family": np.int8(Family.ELEMENTWISE), "peak_key": np.int8(PEAK_KEYS.index("fp32")),
                                  "t_s": t, "flops": size / 8, "work_bytes": size, "blocks": 1000, "threads": 256,
                                  "tiles": 0.0, "name": "add"}))
    return pd.concat(rows, ignore_index=True), figures


def test_examples_pair_every_ordered_gpu_pair_and_show_each_op_with_and_without_its_intensity():
    table, figures = _synthetic(50)
    exs = kernels.examples(table, figures, np.random.default_rng(0))
    assert len(exs) == len(GPUS) * (len(GPUS) - 1)
    assert all(len(e.y) == 100 for e in exs)  # 50 with FLOP and bytes, 50 without
    assert {int(v) // len(Family) for e in exs for v in np.unique(e.view)} == {0, 1}


def test_a_gpu_left_out_is_predicted_from_the_others():
    table, figures = _synthetic()
    exs = kernels.examples(table, figures, np.random.default_rng(0))
    folds = kernels.leave_one_gpu_out(exs, figures)
    for fold in folds:
        for ex, pred in zip(fold.pairs, fold.predicted, strict=True):
            big = ex.t_b > 1e-4  # DRAM-bound: the law above is the DRAM ratio; the fit must find it
            assert np.median(np.abs(pred[big] / ex.t_b[big] - 1)) < 0.10, (ex.a, ex.b)  # 36 % before within_fit
        assert all(np.all((lo <= p) & (p <= hi)) for p, lo, hi in zip(fold.predicted, fold.low, fold.high,
                                                                       strict=True))


def test_the_parameter_file_round_trips(tmp_path):
    table, figures = _synthetic(100)
    exs = kernels.examples(table, figures, np.random.default_rng(0))
    params = kernels.fit_params(exs, figures, "test")
    path = tmp_path / "m.json"
    kernels.write_params(params, str(path))
    doc = json.loads(path.read_text())
    assert doc["seen"]["gpus"] == sorted(GPUS) and "NaN" not in path.read_text()
    back = load_params(path)
    assert np.array_equal(back.weights, params.weights)


def test_fewer_than_three_gpus_is_one_line(tmp_path):
    path = tmp_path / "two.csv"
    path.write_text("device,op,dtype,m,n,duration_s\nTesla T4,elementwise,fp32,1024,1024,1e-5\n"
                    "Tesla V100-PCIE-32GB,elementwise,fp32,1024,1024,6e-6\n")
    with pytest.raises(InputError, match="at least three"):
        fit_kernel_model([path])


def test_a_user_op_table_fit(tmp_path):
    """Three GPUs of a user's sweep, written as op tables: the fit runs and scores every GPU held out."""
    table, figures = _synthetic(60)
    names = {g: load_sheet(g).device_names[0] for g in GPUS}
    for g in GPUS[:3]:
        part = table[table["gpu"] == g]
        pd.DataFrame({"device": names[g], "op": "elementwise", "dtype": "fp32", "m": part["work_bytes"] // 8,
                      "n": 1, "duration_s": part["t_s"]}).to_csv(tmp_path / f"{g}.csv", index=False)
    fit = fit_kernel_model(sorted(tmp_path.glob("*.csv")), output=tmp_path / "ours.json")
    assert sorted(fit.by_gpu["held-out GPU"]) == sorted(GPUS[:3])
    assert (tmp_path / "ours.json").is_file() and fit.params.seen["corpora"] == ["op tables"]


def test_shared_corpora_read(shared_cross_gpu):
    table = corpus.neusight(shared_cross_gpu / "neusight-train")
    assert {"t4", "v100-pcie-32gb", "tesla-p4"} <= set(table["gpu"].dropna())
    assert (table["t_s"] > 0).all() and table["key"].nunique() > 10_000
