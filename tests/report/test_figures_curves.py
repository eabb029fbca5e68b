"""``nodecast curves`` figure (issue 18 item 5): every model has its own line style and marker, and a slow link
(Titan, PCIe 2, 8 GB/s) stays readable beside a fast one (GH200, NVLink-C2C, 450 GB/s)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from nodecast.machines import load_machine
from nodecast.models.curves import bandwidth_curves, parse_sizes

pytest.importorskip("matplotlib", reason="the figures extra (matplotlib) is not installed")

from nodecast.report.figures.curves import curves_figure, model_style  # noqa: E402


@pytest.fixture(scope="module")
def curves():
    """Titan and GH200, every transfer model, 1 B to 1 GiB."""
    return bandwidth_curves([load_machine("titan"), load_machine("gh200")], sizes=parse_sizes("1:1Gi"))


def _model_lines(ax, model: str) -> list:
    return [line for line in ax.get_lines() if (line.get_gid() or "").endswith(f"/{model}")]


def test_every_model_has_its_own_line_style_and_marker(curves):
    """ahead-no-latency and ahead-eq9 were both dash-dot, and ahead-eq9 lies on ahead for pinned copies: each model
    gets a line style and a marker of its own, and the markers of coincident curves do not fall on one another."""
    styles = [model_style(m, curves.models) for m in curves.models]
    assert len(curves.models) == 5
    assert len({repr(ls) for ls, _, _ in styles}) == len(styles)
    assert len({marker for _, marker, _ in styles}) == len(styles)
    assert len({start for _, _, start in styles}) == len(styles)  # markers at different sizes
    fig = curves_figure(curves)
    try:
        for ax in [a for a in fig.axes if a.get_visible() and a.get_lines()]:
            markers = {}
            for model in curves.models:
                lines = _model_lines(ax, model)
                assert len(lines) == len(curves.machines), (ax.get_title(), model)
                markers[model] = {line.get_marker() for line in lines}
                assert len(markers[model]) == 1
            assert len({next(iter(m)) for m in markers.values()}) == len(curves.models), ax.get_title()
        legend = [t.get_text() for t in fig.legends[0].get_texts()]
        assert all(m in legend for m in [*curves.machines, *curves.models])
    finally:
        from nodecast.report.figures import plt

        plt.close(fig)


def test_a_slow_link_is_readable_beside_a_fast_one(curves):
    """On a linear axis up to GH200's 450 GB/s, Titan's 6 GB/s curves were a flat line on the floor: the bandwidth
    axis is logarithmic by default, ticks in plain numbers (no 10^-3), and Titan's curves span much of its height."""
    fig = curves_figure(curves)
    try:
        panels = [a for a in fig.axes if a.get_visible() and a.get_lines()]
        for ax in panels:
            assert ax.get_yscale() == "log", ax.get_title()
            lo, hi = (np.log10(v) for v in ax.get_ylim())
            titan = np.concatenate([line.get_ydata() for line in ax.get_lines()
                                    if (line.get_gid() or "").startswith("titan/")])
            titan = titan[np.isfinite(titan) & (titan > 0)]
            share = (np.log10(titan.max()) - np.log10(titan.min())) / (hi - lo)
            assert share > 0.4, (ax.get_title(), share)
        fig.canvas.draw()
        ticks = [t.get_text() for ax in panels for t in ax.get_yticklabels() if t.get_text()]
        assert ticks and not [t for t in ticks if re.search(r"\^|e[+-]?\d|\\times", t)], ticks
    finally:
        from nodecast.report.figures import plt

        plt.close(fig)


def test_a_linear_axis_is_still_available(curves):
    """AHEAD's Figs. 9-10 use a linear axis: ``log_y=False`` (``--linear-y``) draws it, from 0."""
    fig = curves_figure(curves, log_y=False)
    try:
        ax = next(a for a in fig.axes if a.get_visible())
        assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0
    finally:
        from nodecast.report.figures import plt

        plt.close(fig)
