"""The ``nodecast kernels`` command: table, per-launch output, the ncu command line, and user errors."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nodecast.cli import main
from nodecast.traces.ncu import NCU_COMMAND

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"
V100_FILES = sorted(TRACES.glob("ncu-csv_v100_*.csv"))
needs_v100 = pytest.mark.skipif(len(V100_FILES) != 12, reason=f"the 12 ncu-csv_v100_* files are not in {TRACES}")


@pytest.fixture
def machines(tmp_path: Path, machine_writer) -> tuple[str, str]:
    """V100 and H100 machine files with data-sheet FP32 peaks and Table 1's measured maxima."""
    write_machine = machine_writer
    return (str(write_machine(tmp_path, "v100", "V100", 15.7e12, 900e9)),
            str(write_machine(tmp_path, "h100", "H100", 66.9e12, 3.35e12)))


def test_print_ncu_command(capsys):
    """--print-ncu-command prints the collection command and needs no file nor machine."""
    assert main(["kernels", "--print-ncu-command"]) == 0
    assert capsys.readouterr().out.strip() == NCU_COMMAND


@needs_v100
def test_table_for_the_v100_set(machines, capsys, monkeypatch):
    """The real V100 set prints one row per kernel with bound, interval and every model's time."""
    monkeypatch.setenv("COLUMNS", "250")  # a wide terminal, so that rich does not fold the names
    src, tgt = machines
    assert main(["kernels", *map(str, V100_FILES), "--from", src, "--to", tgt]) == 0
    out = capsys.readouterr().out
    assert "35 kernel launches (5 kernels)" in out
    for word in ("LAMBStage1", "LAMBStage2", "cleanup", "dram", "roofline", "dram-ratio", "flops-ratio",
                 "plain-roofline"):
        assert word in out
    assert "equal instruction counts assumed" in out


@needs_v100
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_per_launch_output(machines, tmp_path, suffix, capsys):
    """-o writes one row per launch with SI columns for every model and the roofline's detail."""
    src, tgt = machines
    out = tmp_path / f"kernels{suffix}"
    assert main(["kernels", *map(str, V100_FILES), "--from", src, "--to", tgt, "-o", str(out)]) == 0
    df = pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out)
    assert len(df) == 35
    for col in ("kernel", "occurrence", "source_s", "roofline_s", "roofline_low_s", "roofline_high_s",
                "bound_target", "oi_dram_flop_per_byte", "dram-ratio_s", "flops-ratio_s", "plain-roofline_s"):
        assert col in df.columns
    assert (df["roofline_low_s"] <= df["roofline_s"]).all() and (df["roofline_s"] <= df["roofline_high_s"]).all()
    assert not list(tmp_path.glob(".*.part"))


@needs_v100
def test_models_option_and_per_launch_rows(machines, capsys):
    """--models restricts the models; --per-launch prints one row per launch."""
    src, tgt = machines
    assert main(["kernels", *map(str, V100_FILES), "--from", src, "--to", tgt, "--models", "dram-ratio",
                 "--per-launch"]) == 0
    out = capsys.readouterr().out
    assert "dram-ratio" in out and "plain-roofline" not in out


# -- user errors: one line, exit 2, nothing written ---------------------------------------------
def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("nodecast: error:") and "\n" not in err and "Traceback" not in err
    return err


@needs_v100
def test_missing_metric_exits_2_and_writes_nothing(machines, tmp_path, capsys):
    """One one-metric file lacks the required metrics: exit 2 naming one, no output file."""
    src, tgt = machines
    out = tmp_path / "o.csv"
    assert main(["kernels", str(V100_FILES[0]), "--from", src, "--to", tgt, "-o", str(out)]) == 2
    assert "missing metric" in _one_line_error(capsys)
    assert not out.exists() and not list(tmp_path.glob(".*.part"))


@needs_v100
def test_target_without_cache_bandwidths_projects_with_a_wider_interval(tmp_path, capsys, machine_writer,
                                                                        monkeypatch):
    """A target with no L1/L2 bandwidth at all (neither measured nor on a data sheet) still projects: exit 0,
    a note naming the unknown levels and the rule, no error telling the user to edit a file."""
    monkeypatch.setenv("COLUMNS", "250")
    write_machine = machine_writer
    src = write_machine(tmp_path, "v100", "V100", 15.7e12, 900e9)
    tgt = write_machine(tmp_path, "bare", "H100", 66.9e12, 3.35e12, measured=False)
    out = tmp_path / "o.csv"
    assert main(["kernels", *map(str, V100_FILES), "--from", str(src), "--to", str(tgt), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "L2 bandwidth unknown for H100" in text and "interval widened" in text
    df = pd.read_csv(out)
    assert (df["roofline_low_s"] <= df["roofline_s"]).all() and (df["roofline_s"] <= df["roofline_high_s"]).all()


@needs_v100
def test_target_without_the_kernels_precision_exits_2(tmp_path, capsys, machine_writer):
    """A target that lacks a compute peak the kernels need is one line naming the key; the hint says how to give
    it in a machine file of one's own (not to edit a shipped one)."""
    write_machine = machine_writer
    src = write_machine(tmp_path, "v100", "V100", 15.7e12, 900e9)
    tgt = write_machine(tmp_path, "nofp32", "H100", 66.9e12, 3.35e12)
    tgt.write_text(re.sub(r"\[gpu\.peak_flops\.fp32\]\nfma = [^\n]*\naddmul = [^\n]*\n", "", tgt.read_text()))
    out = tmp_path / "o.parquet"
    assert main(["kernels", *map(str, V100_FILES), "--from", str(src), "--to", str(tgt), "-o", str(out)]) == 2
    err = _one_line_error(capsys)
    assert "gpu.peak_flops.fp32" in err and "nodecast machines template" in err
    assert not out.exists()


#: Targets of issue 18: every NVSwitch/superchip catalogue node, DGX A100, and a node composed from a data sheet.
CATALOGUE_TARGETS = ["h200-node", "h100-sxm5-server", "gh200", "dgx-a100", "h100-sxm5-80gb"]


@needs_v100
@pytest.mark.parametrize("target", CATALOGUE_TARGETS)
def test_shared_set_projects_onto_catalogue_and_composed_nodes(target, tmp_path, capsys, monkeypatch):
    """The shared V100 set projects from the Euro-Par V100 server onto each target: exit 0, one row per kernel,
    every launch with a finite positive time inside a non-empty interval whose L2/L1 come from the data sheet."""
    monkeypatch.setenv("COLUMNS", "250")
    out = tmp_path / "o.csv"
    assert main(["kernels", *map(str, V100_FILES), "--from", "v100-pcie-server", "--to", target, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "35 kernel launches (5 kernels)" in text
    for word in ("LAMBStage1", "LAMBStage2", "cleanup", "roofline"):
        assert word in text
    assert "L2 " in text and "data sheet x v100-pcie-server measured/peak" in text
    df = pd.read_csv(out)
    times = df[["roofline_low_s", "roofline_s", "roofline_high_s"]].to_numpy()
    assert np.isfinite(times).all() and (times > 0).all()
    assert (times[:, 0] <= times[:, 1]).all() and (times[:, 1] <= times[:, 2]).all()
    # A faster GPU than the V100: no kernel is projected slower than it ran on the source.
    assert (df["roofline_high_s"] <= df["source_s"] * (1 + 1e-9)).all()


def test_zero_duration_exits_2(machines, tmp_path, capsys):
    """A CSV whose only launch has zero duration is refused with one line."""
    src, tgt = machines
    p = tmp_path / "zero.csv"
    p.write_text('"ID","Process ID","Process Name","Host Name","Kernel Name","gpu__time_duration.sum",'
                 '"dram__bytes.sum","lts__t_bytes.sum","l1tex__t_bytes.sum",'
                 '"sm__sass_thread_inst_executed_op_ffma_pred_on.sum","sm__sass_thread_inst_executed_op_fadd_pred_on.sum",'
                 '"sm__sass_thread_inst_executed_op_fmul_pred_on.sum"\n'
                 '"","","","","","nsecond","byte","byte","byte","inst","inst","inst"\n'
                 '"0","1","a","h","k","0","10","10","10","1","1","1"\n')
    assert main(["kernels", str(p), "--from", src, "--to", tgt]) == 2
    assert "durations must be > 0" in _one_line_error(capsys)


def test_other_page_exits_2(machines, tmp_path, capsys):
    """A --page details export (section metrics, not ids) is refused with a hint about it."""
    src, tgt = machines
    p = tmp_path / "details.csv"
    p.write_text('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Section Name",'
                 '"Metric Name","Metric Unit","Metric Value"\n'
                 '"0","1","a","h","k","1","7","GPU Speed Of Light Throughput","Duration","usecond","3.2"\n')
    assert main(["kernels", str(p), "--from", src, "--to", tgt]) == 2
    assert "--page details" in _one_line_error(capsys)


def test_bad_output_extension_exits_2_before_reading(machines, tmp_path, capsys):
    """An -o path with an unknown extension is refused before any work."""
    src, tgt = machines
    out = tmp_path / "o.xlsx"
    assert main(["kernels", "nonexistent.csv", "--from", src, "--to", tgt, "-o", str(out)]) == 2
    assert ".xlsx" in _one_line_error(capsys)
    assert not out.exists()


def test_unwritable_output_exits_2_before_reading(machines, tmp_path, capsys):
    """An -o in a folder that does not exist is refused before any input is read (none exists here)."""
    src, tgt = machines
    assert main(["kernels", "nonexistent.csv", "--from", src, "--to", tgt, "-o",
                 str(tmp_path / "nodir" / "o.csv")]) == 2
    assert "-o: folder does not exist" in _one_line_error(capsys)
    assert not (tmp_path / "nodir").exists()


@needs_v100
@pytest.mark.parametrize(("content", "fragment"), [
    (b"function,pc_offset,threads_executed\n_Z5mylogPf,0x60\n", "line 2: row has 2 fields, the header has 3"),
    (b"\x00\x82\xff\xfe garbage", "not a UTF-8 text file"),
    ("function,pc_offset,threads_executed\n".encode("utf-16"), "not a UTF-8 text file"),
    (None, "is a folder"),
])
def test_bad_sass_counts_exit_2(machines, tmp_path, capsys, content, fragment):
    """A short row, a binary or UTF-16 file, or a folder as --sass-counts: one line naming the file, exit 2."""
    src, tgt = machines
    sass = tmp_path / "log.sass"
    sass.write_text("\tcode for sm_70\n\t\tFunction : _Z5mylogPf\n        /*0060*/   MUFU.LG2 R0, R0 ;\n")
    counts = tmp_path / "counts.csv"
    if content is None:
        counts.mkdir()
    else:
        counts.write_bytes(content)
    out = tmp_path / "o.csv"
    assert main(["kernels", *map(str, V100_FILES), "--from", src, "--to", tgt, "--sass-source", str(sass),
                 "--sass-target", str(sass), "--sass-counts", str(counts), "-o", str(out)]) == 2
    err = _one_line_error(capsys)
    assert str(counts) in err and fragment in err
    assert not out.exists()


def test_missing_arguments_exit_2(capsys):
    """Without files or machines the command says what is missing, in one line."""
    assert main(["kernels"]) == 2
    assert "METRICS.csv" in _one_line_error(capsys)
    assert main(["kernels", "x.csv", "--from", "summit"]) == 2
    assert "--to" in _one_line_error(capsys)
    assert main(["kernels", "x.csv", "--from", "a", "--to", "b", "--sass-source", "s.sass"]) == 2
    assert "--sass-target" in _one_line_error(capsys)


@needs_v100
def test_sass_listings_without_matching_kernels(machines, tmp_path, capsys, monkeypatch):
    """SASS listings that hold none of the profiled kernels leave the counts equal and say so."""
    monkeypatch.setenv("COLUMNS", "250")
    # Excerpt of real cuobjdump -sass output (sm_70), celeritas-project/cuda-test-snippets logs/log-float.s at
    # commit 5443fc71390e1110f7737285f9e93f788a834ca4 (a logf kernel; none of the DeepCAM kernels): the two
    # header lines and instructions 0x0060-0x0090, with the file's blank lines between them dropped.
    listing = ("\tcode for sm_70\n\t\tFunction : _Z5mylogPf\n"
               "        /*0060*/                   MUFU.LG2 R0, R0 ;\n"
               "        /*0070*/                   FMUL.FTZ R5, R0, 0.69314718246459960938 ;\n"
               "        /*0080*/                   STG.E.SYS [R2], R5 ;\n"
               "        /*0090*/                   EXIT ;\n")
    sass = tmp_path / "log.sass"
    sass.write_text(listing)
    src, tgt = machines
    assert main(["kernels", *map(str, V100_FILES), "--from", src, "--to", tgt, "--sass-source", str(sass),
                 "--sass-target", str(sass)]) == 0
    out = capsys.readouterr().out
    assert "5 of 5 kernels not found in both listings" in out
    assert "0 kernels' target FLOP counts adjusted" in out


@needs_v100
def test_target_metrics_identity_gives_zero_error(machines, tmp_path, capsys):
    """Projecting the V100 set onto the same GPU and comparing with itself gives 0 % MAPE for every model."""
    src, _ = machines
    table = tmp_path / "t.csv"
    assert main(["kernels", *map(str, V100_FILES), "--from", src, "--to", src,
                 "--target-metrics", *map(str, V100_FILES), "-o", str(table)]) == 0
    out = capsys.readouterr().out
    assert "35 launches paired" in out and "unmatched: 0 source, 0 target" in out
    rows = [line for line in out.splitlines() if line.startswith("│ roofline ")]
    assert rows and "0.0 %" in rows[0]


@needs_v100
def test_project_uses_kernel_model_when_metrics_are_given(machines):
    """nodecast.cost.project with metrics projects every kernel op with the roofline model; without, the roofline
    projects none and the metrics-free kernel models (wave-scaling, the ratios, the default) project all 35."""
    from nodecast.machines import load_machine
    from nodecast.cost.project import project
    from nodecast.traces.ncu import read_ncu_csv, trace_from_metrics

    src, tgt = map(load_machine, machines)
    metrics = read_ncu_csv(V100_FILES)
    trace = trace_from_metrics(metrics)
    with_metrics = project(trace, src, tgt, kind="kernel", metrics=metrics)
    assert with_metrics.results["roofline"].handled.sum() == 35
    assert (with_metrics.results["roofline"].time_s > 0).all()
    without = project(trace, src, tgt, kind="kernel")
    assert "roofline" in without.idle and "plain-roofline" in without.idle
    for name in ("wave-scaling", "dram-ratio", "flops-ratio", "default-kernel"):
        assert without.results[name].handled.sum() == 35, name
    assert np.allclose(without.results["default-kernel"].time_s, without.results["wave-scaling"].time_s)
    assert np.allclose(with_metrics.results["default-kernel"].time_s, with_metrics.results["roofline"].time_s)


# -- total row, kernels whose short names coincide ------------------------------------------------
# Two EigenMetaKernel template instances as TensorFlow's kernels are named (demangled): they differ only
# inside nested template arguments, which the table's short names fold into <…>.
EIGEN_SUM = ("void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<Eigen::TensorAssignOp<Eigen::TensorMap<"
             "Eigen::Tensor<float, 1, 1, int>, 16>, Eigen::TensorCwiseUnaryOp<Eigen::internal::scalar_right<float, "
             "float, Eigen::internal::scalar_sum_op<float, float> > > > const, Eigen::GpuDevice>, int>"
             "(Eigen::TensorEvaluator<...>, int)")
EIGEN_PRODUCT = EIGEN_SUM.replace("scalar_sum_op", "scalar_product_op")


def _wide_csv(path: Path, launches: list[tuple[str, int]]) -> Path:
    """An ncu --csv --page raw export (one column per metric, units row) of the given (kernel, ns) launches."""
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","gpu__time_duration.sum","dram__bytes.sum",'
            '"lts__t_bytes.sum","l1tex__t_bytes.sum","sm__sass_thread_inst_executed_op_ffma_pred_on.sum",'
            '"sm__sass_thread_inst_executed_op_fadd_pred_on.sum","sm__sass_thread_inst_executed_op_fmul_pred_on.sum"\n'
            '"","","","","","nsecond","byte","byte","byte","inst","inst","inst"\n')
    rows = "".join(f'"{i}","1","python","h","{name}","{ns}","4000000","4000000","4000000","1000","10","10"\n'
                   for i, (name, ns) in enumerate(launches))
    path.write_text(head + rows)
    return path


def test_alike_short_names_are_numbered_and_totalled(machines, tmp_path, capsys, monkeypatch):
    """Two Eigen kernels with one short name get #1 and #2, a total row sums every launch, -o keeps full names."""
    monkeypatch.setenv("COLUMNS", "250")
    src, tgt = machines
    csv = _wide_csv(tmp_path / "eigen.csv", [(EIGEN_SUM, 5000), (EIGEN_PRODUCT, 7000), (EIGEN_SUM, 6000)])
    out = tmp_path / "launches.csv"
    assert main(["kernels", str(csv), "--from", src, "--to", tgt, "--models", "dram-ratio", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    label = "Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<…>, int>"
    assert f"{label} #1" in text and f"{label} #2" in text
    assert "3 kernel launches (2 kernels)" in text
    total = next(line for line in text.splitlines() if "│ total" in line)
    assert total.split("│")[2:4] == ["        3 ", "    18 µs "]
    assert "numbered" in text and "-o writes their full names" in text
    df = pd.read_csv(out)
    assert df["kernel"].tolist() == [EIGEN_SUM, EIGEN_PRODUCT, EIGEN_SUM]
    assert df["label"].tolist() == [f"{label} #1", f"{label} #2", f"{label} #1"]


@needs_v100
def test_json_without_file_prints_only_the_document(machines, tmp_path, capsys):
    """--json alone prints the JSON document (headline first, per-kernel rows, total) instead of the table; what was
    written goes to stderr, so stdout stays one JSON document."""
    import json

    src, tgt = machines
    out = tmp_path / "launches.csv"
    assert main(["kernels", *map(str, V100_FILES), "--from", src, "--to", tgt, "--models", "dram-ratio", "--json",
                 "-o", str(out)]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert list(doc)[0] == "headline" and len(doc["per_kernel"]) == 5 and doc["total"]["launches"] == 35
    assert doc["headline"][1]["value"] == doc["total"]["dram-ratio_s"]
    assert f"wrote 35 launches to {out}" in captured.err and out.exists()
