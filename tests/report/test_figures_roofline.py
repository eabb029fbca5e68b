"""``report/figures/roofline.py``: one kernel's hierarchical roofline on both GPUs (the paper's Fig. 2)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pandas as pd

from nodecast.workflows.kernels import KernelRoofline
from nodecast.machines.loader import load_machine_file
from nodecast.models.roofline_equations import KernelInputs, project_kernels
from nodecast.models.roofline_figures import gpu_figures
from nodecast.report import figures
from nodecast.report.figures.roofline import draw_projection
from nodecast.traces.ncu import FLOP_OPS, PRECISION_LETTER, KernelMetrics

PNG = b"\x89PNG\r\n\x1a\n"


def _write_machine():
    """``write_machine`` of tests/commands/conftest.py (loaded by path: machine files with data-sheet peaks)."""
    name = "nodecast_test_commands_conftest"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).parents[1] / "commands" / "conftest.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name].write_machine


def _projection(tmp_path):
    """A made-up FP64 kernel (1e8 FMA, 1.6 GB L1, 0.8 GB L2, 0.4 GB DRAM, 1 ms) projected V100 -> H100."""
    write_machine = _write_machine()
    v100 = load_machine_file(write_machine(tmp_path, "v100", "V100", 15.7e12, 900e9, fp64=7.8e12))
    h100 = load_machine_file(write_machine(tmp_path, "h100", "H100", 66.9e12, 3.35e12, fp64=33.5e12))
    row = {"kernel": "k", "occurrence": 0, "id": 0, "duration_s": 1e-3}
    for p in PRECISION_LETTER:
        for o in FLOP_OPS:
            row[f"{p}_{o}_inst"] = 0.0
    row.update(fp64_fma_inst=1e8, l1_bytes=1.6e9, l2_bytes=8e8, dram_bytes=4e8, threads_per_inst=math.nan)
    km = KernelMetrics(pd.DataFrame([row]), ["t"], frozenset())
    return project_kernels(KernelInputs.from_metrics(km), gpu_figures(v100), gpu_figures(h100, reference=v100))


def test_figure_has_both_panels_and_the_projected_area(tmp_path):
    """The figure has a source and a target panel; the target shows the eq.-9 area and its mean."""
    proj = _projection(tmp_path)
    fig = draw_projection(proj, "k", "1 launch")
    src_ax, tgt_ax = fig.axes
    assert "source" in src_ax.get_title() and "target" in tgt_ax.get_title()
    labels = [t.get_text() for t in tgt_ax.get_legend().get_texts()]
    assert any("projected interval" in t for t in labels)
    assert any(t.startswith("mean ") and "426.8 µs" in t for t in labels)  # 0.426825 ms, see test_roofline
    assert any("BW^ceil L2 1,259 GB/s" in t for t in (x.get_text() for x in src_ax.get_legend().get_texts()))
    fig.savefig(tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes()[:8] == PNG




def test_draw_writes_the_figure_in_the_format_of_the_extension(tmp_path):
    """``figures.draw`` of a KernelRoofline writes PNG, SVG or PDF by the path's extension, through a temporary file."""
    result = KernelRoofline("k", "1 launch", _projection(tmp_path))
    for name, magic in (("f.png", PNG), ("f.svg", b"<?xml"), ("f.pdf", b"%PDF")):
        path = figures.draw(result, tmp_path / name)
        assert path.read_bytes().startswith(magic)
    assert not list(tmp_path.glob(".*.part"))
