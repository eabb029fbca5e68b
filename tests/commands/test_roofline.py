"""The ``nodecast roofline`` command: the Fig. 2-style figure and its user errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodecast.cli import main

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
