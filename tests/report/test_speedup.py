"""One speed-up everywhere (issue 18 item 5): time on A / time on B, labelled "speed-up (A / B)", above 1: B is
faster, in the terminal tables, the pages' tables, the headline (JSON and page) of one target and of several. And
the end-to-end interval on B: printed when the models gave one, even of zero width; "—" only when none did."""

from __future__ import annotations

import io
import math

import pytest
from rich.console import Console

from nodecast.cost.ops import CostOptions
from nodecast.workflows.forecast import forecast_trace, read_trace_and_api
from nodecast.workflows.targets import TargetSpec, compare_targets
from nodecast.report import terminal
from nodecast.report.html.forecast import forecast_page
from nodecast.report.html.targets import comparison_page
from nodecast.speedup import SPEEDUP
from nodecast.report.tables import fmt_interval_seconds, fmt_ratio

VECTORADD = "nsys_vectoradd-streams_t4.sqlite"
#: Models that give no interval (AHEAD for the copies, the DRAM ratio for the kernels).
NO_INTERVAL = CostOptions(models=("ahead", "dram-ratio"))


def _text(result: object) -> str:
    out = io.StringIO()
    terminal.render(result, Console(file=out, width=260))
    return out.getvalue()


def _row(text: str, start: str) -> list[str]:
    """The cells of the first table row (or header, ``┃``) whose first cell starts with ``start``."""
    line = next(line for line in text.replace("┃", "│").splitlines() if line.lstrip("│ ").startswith(start))
    return [c.strip() for c in line.strip("│ \n").split("│")]


def test_one_target_terminal_page_and_headline_show_a_over_b(shared_traces):
    """T4 -> Summit: end to end 831 ms on A, 817 ms on B, so the speed-up is 1.02× (it printed "B / A 0.983x" in
    the table beside a headline of A / B); GPU busy 18.4 ms -> 4.59 ms reads 4×, not 0.25x."""
    result = forecast_trace(shared_traces / VECTORADD, "summit")
    speedup = result.measured_end_to_end_s / result.end_to_end_s
    assert speedup > 1 and math.isclose(result.speedup, speedup)
    text = _text(result)
    assert "B / A" not in text
    header = _row(text, "quantity")
    e2e = _row(text, "end to end")
    assert e2e[header.index(SPEEDUP)] == fmt_ratio(speedup) == "1.02×"
    busy = result.busy_s()
    gpu = _row(text, "GPU 0 busy")
    assert gpu[header.index(SPEEDUP)] == fmt_ratio(busy["measured on A"][0] / busy["forecast on B"][0])
    headline = result.headline()[-1]
    assert headline.label.startswith(SPEEDUP) and "above 1: B is faster" in headline.label
    assert headline.value == result.speedup and headline.unit == "x"
    html = forecast_page(result).tables[0].html
    assert f">{SPEEDUP}</th>" in html and "B / A" not in html and f'data-value="{result.speedup!r}"' in html


def test_several_targets_terminal_and_page_show_a_over_b(shared_traces):
    """The comparison table names its column as the one-target table does, with the same value."""
    trace, api = read_trace_and_api(shared_traces / VECTORADD)
    comp = compare_targets(trace, api, [TargetSpec("summit")], jobs=1)
    row = comp.table().iloc[0]
    speedup = comp.measured_end_to_end_s / row["end_to_end_s"]
    assert math.isclose(row["speedup"], speedup)
    text = _text(comp)
    header = _row(text, "target")
    assert _row(text, "summit")[header.index(SPEEDUP)] == fmt_ratio(speedup)
    assert f"{SPEEDUP} above 1: B is faster" in " ".join(text.split())
    html = comparison_page(comp).tables[0].html
    assert f">{SPEEDUP}</th>" in html and "A / B</th>" not in html


def test_zero_width_interval_prints_both_ends_and_no_interval_prints_a_dash(shared_traces):
    """The learned kernel model gives the T4 -> Summit kernels an interval too narrow to move the end to end
    (818 ms both ends, the copies scaled from the run's by the default ahead-scaled): it prints "818 ms – 818 ms",
    as the comparison does; with models that give none it is "—"."""
    result = forecast_trace(shared_traces / VECTORADD, "summit")
    low, high = result.interval_s
    assert result.costs.has_interval and fmt_interval_seconds(low, high) == "818 ms – 818 ms"
    text = _text(result)
    header = _row(text, "quantity")
    assert _row(text, "end to end")[header.index("interval on B")] == "818 ms – 818 ms"
    trace, api = read_trace_and_api(shared_traces / VECTORADD)
    comp = compare_targets(trace, api, [TargetSpec("summit")], jobs=1)
    text = _text(comp)
    assert _row(text, "summit")[_row(text, "target").index("interval")] == "818 ms – 818 ms"
    (card,) = [n for n in comp.headline() if n.label.startswith("end to end, forecast on summit")]
    assert (card.low, card.high) == (low, high)  # the page's card shows it too

    bare = forecast_trace(shared_traces / VECTORADD, "summit", options=NO_INTERVAL)
    assert not bare.costs.has_interval
    text = _text(bare)
    assert _row(text, "end to end")[_row(text, "quantity").index("interval on B")] == "—"
    comp = compare_targets(trace, api, [TargetSpec("summit")], options=NO_INTERVAL, jobs=1)
    text = _text(comp)
    assert _row(text, "summit")[_row(text, "target").index("interval")] == "—"
    (card,) = [n for n in comp.headline() if n.label.startswith("end to end, forecast on summit")]
    assert (card.low, card.high) == (None, None)
    html = comparison_page(comp).tables[0].html  # the page's low and high columns: missing, not the forecast
    assert html.count('data-value="nan"') >= 2


@pytest.mark.parametrize("bad", [0.0, math.nan])
def test_speedup_of_no_time_on_b_is_missing(bad):
    """A forecast of 0 s (or none) has no speed-up: NaN, printed "—", never a division error."""
    from nodecast.speedup import speedup

    assert math.isnan(speedup(1.0, bad)) and fmt_ratio(speedup(1.0, bad)) == "—"
    assert speedup(2.0, 1.0) == 2.0
