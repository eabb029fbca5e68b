"""The commands on op tables (``nodecast.traces.op_table``): inspect, project, forecast and evaluate read them like
traces; evaluate pairs kernels of other names by op, dtype and shape, else compares the totals."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from nodecast.cli import main
from nodecast.traces import op_table


def _tables(folder, shared_cross_gpu, rows=200):
    """NeuSight's first ``rows`` bmm shapes of the T4 and the same shapes, in the same order, on the V100."""
    frame = op_table.from_neusight(shared_cross_gpu / "neusight-train" / "bmm.parquet")
    t4 = frame[frame["device"] == "Tesla T4"].head(rows)
    v100 = t4[["batch", "m", "n", "k"]].merge(frame[frame["device"] == "Tesla V100-PCIE-32GB"],
                                             on=["batch", "m", "n", "k"], how="left")
    return (op_table.write_op_table(t4, folder / "t4.csv"),
            op_table.write_op_table(v100[list(t4.columns)], folder / "v100.csv"))


def test_commands_run_on_neusight_op_tables(shared_cross_gpu, tmp_path, capsys):
    """inspect, project --to, forecast --to and evaluate run on op tables of the T4 and V100; evaluate pairs all
    200 bmm launches, most by op, dtype and shape (cuBLAS picks other kernels on the V100)."""
    t4, v100 = _tables(tmp_path, shared_cross_gpu)
    assert main(["inspect", str(t4)]) == 0
    assert "op-table; GPUs 0: Tesla T4" in capsys.readouterr().out
    assert main(["project", str(t4), "--to", "v100-pcie-32gb"]) == 0
    assert "200 GPU ops" in capsys.readouterr().out
    assert main(["forecast", str(t4), "--to", "v100-pcie-32gb"]) == 0
    assert "Whole-application forecast" in capsys.readouterr().out
    out = tmp_path / "ev.json"
    assert main(["evaluate", str(t4), str(v100), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["ops"]["aligned_pairs"] == 200 and doc["ops"]["unmatched_a"] == 0
    assert doc["ops"]["paired_by_shape"] > 100 and not doc["totals_only"]
    assert f"aligned 200 op pairs ({doc['ops']['paired_by_shape']} by op, dtype and shape)" in printed


def test_evaluate_without_a_pair_compares_totals(tmp_path, capsys):
    """Two tables whose kernels pair neither by name nor by shape: evaluate exits 0 and says in its table lines that
    it compared the totals only (it used to refuse: "nothing to evaluate"); --png is not written, and says so."""
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("device,op,name,duration_s\nTesla T4,gemm,turing_a,1e-3\nTesla T4,gemm,turing_b,2e-3\n")
    b.write_text("device,op,name,duration_s\nTesla V100-PCIE-32GB,gemm,volta_a,5e-4\n")
    png = tmp_path / "box.png"
    assert main(["evaluate", str(a), str(b), "--models", "dram-ratio", "--png", str(png)]) == 0
    out = capsys.readouterr()
    assert "WMAPE: no op of A paired with one of B that a model projected; compared the totals only" in out.out
    assert "Kernels: no launch of A paired with one of B, compared the totals only" in out.out
    assert f"{png} not written" in out.err and not png.exists()
    table = tmp_path / "t.csv"
    assert main(["evaluate", str(a), str(b), "--models", "dram-ratio", "--table", str(table)]) == 0
    assert pd.read_csv(table)["ops"].tolist() == [0, 0]


def test_op_table_of_copies_still_has_nothing_to_evaluate(tmp_path, capsys):
    """Copies that do not pair (other sizes) and no kernel: nothing to evaluate, one line, exit 2, as before."""
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("device,op,bytes,duration_s\nTesla T4,copy,1000,1e-6\n")
    b.write_text("device,op,bytes,duration_s\nTesla V100-PCIE-32GB,copy,2000,1e-6\n")
    assert main(["evaluate", str(a), str(b), "--models", "ahead"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nothing to evaluate" in err


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_convert_writes_an_op_table_as_a_trace(tmp_path, capsys, suffix):
    """``nodecast convert`` reads an op table like any trace (here to nodecast's Parquet, which keeps its op
    classes and shapes)."""
    frame = op_table.check_frame(pd.DataFrame({"device": ["Tesla T4"], "op": ["gemm"], "dtype": ["bf16"],
                                               "m": [8], "n": [8], "k": [8], "duration_s": [1e-6]}))
    src = op_table.write_op_table(frame, tmp_path / f"ops{suffix}")
    out = tmp_path / "trace.parquet"
    assert main(["convert", str(src), "-o", str(out)]) == 0
    from nodecast.traces.load import load_trace

    back = load_trace(out)
    assert back.meta.format == "op-table" and back["m"].tolist() == [8] and back["flops"].tolist() == [1024.0]
