"""The ``nodecast roofline`` command: the Fig. 2-style figure and its user errors."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from nodecast.cli import main
from nodecast.commands.roofline import draw_projection, select_kernel
from nodecast.errors import InputError
from nodecast.machines.loader import load_machine_file
from nodecast.models.roofline import KernelInputs, gpu_figures, project_kernels
from nodecast.traces.ncu import FLOP_OPS, PRECISION_LETTER, KernelMetrics

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"
V100_FILES = sorted(TRACES.glob("ncu-csv_v100_*.csv"))
needs_v100 = pytest.mark.skipif(len(V100_FILES) != 12, reason=f"the 12 ncu-csv_v100_* files are not in {TRACES}")
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def machines(tmp_path: Path, machine_writer) -> tuple[str, str]:
    """V100 and H100 machine files (data sheets + Table 1)."""
    write_machine = machine_writer
    return (str(write_machine(tmp_path, "v100", "V100", 15.7e12, 900e9, fp64=7.8e12)),
            str(write_machine(tmp_path, "h100", "H100", 66.9e12, 3.35e12, fp64=33.5e12)))


@needs_v100
def test_draws_a_png_for_a_real_kernel(machines, tmp_path, capsys):
    """The LAMB stage-1 kernel (9 launches summed) is drawn to a PNG through a temporary file."""
    src, tgt = machines
    out = tmp_path / "lamb1.png"
    assert main(["roofline", *map(str, V100_FILES), "--from", src, "--to", tgt, "--kernel", "LAMBStage1",
                 "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG
    assert not list(tmp_path.glob(".*.part"))


@needs_v100
def test_one_launch_as_svg(machines, tmp_path):
    """--launch draws a single launch; an .svg path gives an SVG."""
    src, tgt = machines
    out = tmp_path / "l2norm.svg"
    assert main(["roofline", *map(str, V100_FILES), "--from", src, "--to", tgt, "--kernel", "L2NormFunctor",
                 "--launch", "3", "-o", str(out)]) == 0
    assert out.read_text().lstrip().startswith("<?xml")


def test_figure_has_both_panels_and_the_projected_area(tmp_path, machine_writer):
    """The figure has a source and a target panel; the target shows the eq.-9 area and its mean."""
    write_machine = machine_writer
    v100 = load_machine_file(write_machine(tmp_path, "v100", "V100", 15.7e12, 900e9, fp64=7.8e12))
    h100 = load_machine_file(write_machine(tmp_path, "h100", "H100", 66.9e12, 3.35e12, fp64=33.5e12))
    row = {"kernel": "k", "occurrence": 0, "id": 0, "duration_s": 1e-3}
    for p in PRECISION_LETTER:
        for o in FLOP_OPS:
            row[f"{p}_{o}_inst"] = 0.0
    row.update(fp64_fma_inst=1e8, l1_bytes=1.6e9, l2_bytes=8e8, dram_bytes=4e8, threads_per_inst=math.nan)
    km = KernelMetrics(pd.DataFrame([row]), ["t"], frozenset())
    proj = project_kernels(KernelInputs.from_metrics(km), gpu_figures(v100), gpu_figures(h100, reference=v100))
    fig = draw_projection(proj, "k", "1 launch")
    src_ax, tgt_ax = fig.axes
    assert "source" in src_ax.get_title() and "target" in tgt_ax.get_title()
    labels = [t.get_text() for t in tgt_ax.get_legend().get_texts()]
    assert any("projected interval" in t for t in labels)
    assert any(t.startswith("mean ") and "426.8 µs" in t for t in labels)  # 0.426825 ms, see test_roofline
    assert any("BW^ceil L2 1,259 GB/s" in t for t in (x.get_text() for x in src_ax.get_legend().get_texts()))
    fig.savefig(tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes()[:8] == PNG


def test_select_kernel_by_unique_part():
    """A part of a name selects the one kernel containing it; ambiguous or unknown parts are errors."""
    names = ["void a<1>(int)", "void ab<2>(int)", "cleanup(float*)"]
    assert select_kernel(names, "cleanup") == "cleanup(float*)"
    assert select_kernel(names, "void a<1>(int)") == "void a<1>(int)"
    with pytest.raises(InputError, match="2 kernels contain"):
        select_kernel(names, "void a")
    with pytest.raises(InputError, match="no kernel name contains"):
        select_kernel(names, "zzz")


# -- user errors ---------------------------------------------------------------------------------------
def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("nodecast: error:") and "\n" not in err
    return err


@needs_v100
def test_kernel_without_flop_exits_2(machines, tmp_path, capsys):
    """The fill kernel executes no FP instruction: no OI to draw, one error line, no file."""
    src, tgt = machines
    out = tmp_path / "fill.png"
    assert main(["roofline", *map(str, V100_FILES), "--from", src, "--to", tgt, "--kernel", "fill_kernel",
                 "-o", str(out)]) == 2
    assert "FLOP = 0" in _one_line_error(capsys)
    assert not out.exists()


@needs_v100
def test_ambiguous_kernel_and_bad_launch_exit_2(machines, tmp_path, capsys):
    """A part matching several kernels, or a launch number out of range, is one error line."""
    src, tgt = machines
    base = ["roofline", *map(str, V100_FILES), "--from", src, "--to", tgt, "-o", str(tmp_path / "x.png")]
    assert main([*base, "--kernel", "multi_tensor_apply_kernel"]) == 2
    assert "3 kernels contain" in _one_line_error(capsys)
    assert main([*base, "--kernel", "cleanup", "--launch", "7"]) == 2
    assert "3 launches" in _one_line_error(capsys)


def test_bad_figure_extension_exits_2(machines, tmp_path, capsys):
    """A figure path that is not .png/.svg/.pdf is refused before reading anything."""
    src, tgt = machines
    assert main(["roofline", "none.csv", "--from", src, "--to", tgt, "--kernel", "k", "-o",
                 str(tmp_path / "f.jpg")]) == 2
    assert ".jpg" in _one_line_error(capsys)


def test_unwritable_figure_path_exits_2_before_reading(machines, tmp_path, capsys):
    """A figure in a folder that does not exist, or a folder as figure, is refused before any work."""
    src, tgt = machines
    base = ["roofline", "none.csv", "--from", src, "--to", tgt, "--kernel", "k", "-o"]
    assert main([*base, str(tmp_path / "nodir" / "f.png")]) == 2
    assert "-o: folder does not exist" in _one_line_error(capsys)
    (tmp_path / "d.png").mkdir()
    assert main([*base, str(tmp_path / "d.png")]) == 2
    assert "-o: is a folder" in _one_line_error(capsys)
