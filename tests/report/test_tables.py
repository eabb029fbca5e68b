"""Terminal output helpers: the pipe-safe console and the number formatters."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from nodecast.units import fmt_bytes, fmt_gbps, fmt_seconds, significant

_WRITE_UNTIL_CUT = """
import sys
from nodecast.report.tables import console
out = console()
try:
    for i in range(200_000):
        out.print("line", i)
except BrokenPipeError:
    sys.exit(0)
sys.exit(3)
"""


def test_console_cut_short_by_the_reader_raises_broken_pipe_not_exit_1():
    # `nodecast ... | head -1`: rich's own Console would exit with status 1 here.
    proc = subprocess.Popen([sys.executable, "-c", _WRITE_UNTIL_CUT], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().startswith(b"line 0")
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert b"Traceback" not in err


# -- number formatting: units switch at their boundary, never an exponent (issue 10, item 8) --------------------

MIB, GIB = 1024**2, 1024**3


@pytest.mark.parametrize(("value", "shown"), [
    (0, "0 B"), (1, "1 B"), (1000, "1,000 B"), (1023, "1,023 B"), (1023.6, "1 KiB"), (1024, "1 KiB"),
    (1536, "1.5 KiB"), (1000 * MIB, "1,000 MiB"), (1008 * MIB, "1,008 MiB"), (1023 * MIB, "1,023 MiB"),
    (1023.6 * MIB, "1 GiB"), (1024 * MIB, "1 GiB"), (62.7 * GIB, "62.7 GiB"), (999.7 * MIB, "1,000 MiB"),
    (1024**6 * 2048, "2,048 EiB"), (-5 * MIB, "-5 MiB"), (math.nan, "—"),
])
def test_fmt_bytes_switches_unit_at_1024_and_never_prints_an_exponent(value, shown):
    """Byte counts read in binary units; what rounds to 1,024 of a unit shows in the next ('1.02e+03 MiB' before)."""
    assert fmt_bytes(value) == shown


@pytest.mark.parametrize(("value", "shown"), [
    (0, "0 s"), (4e-10, "0.4 ns"), (999.96e-9, "1 µs"), (0.0015, "1.5 ms"), (0.9999, "1 s"), (1.43, "1.43 s"),
    (795e-3, "795 ms"), (1500, "1,500 s"), (1e7, "10,000,000 s"),
])
def test_fmt_seconds_switches_unit_at_1000_and_never_prints_an_exponent(value, shown):
    """Times read in ns/µs/ms/s; 1,500 s stays readable ('1.5e+03 s' before) and 999.96 ns reads 1 µs."""
    assert fmt_seconds(value) == shown


def test_fmt_gbps_and_default_cells_have_no_exponent():
    """A DtoD copy at 1,946 GB/s (a real nvprof trace) printed '1.95e+03'; table cells avoid exponents too."""
    assert (fmt_gbps(1.946e12), fmt_gbps(6.03e9), fmt_gbps(1e3)) == ("1,946", "6.03", "0.000001")
    assert [significant(v, 4) for v in (12345.6, 0.0001234, 2.5)] == ["12,346", "0.0001234", "2.5"]


_HOSTILE = "[/] [bold]x[/bold] [link=https://example.com]y[/link] \x1b]0;title\x07 \x1b[2J :smile:"
_VISIBLE = "[/] [bold]x[/bold] [link=https://example.com]y[/link] \\x1b]0;title\\x07 \\x1b[2J :smile:"


def test_results_console_prints_any_string_as_text(capsys):
    """The console nodecast builds reads no markup, no emoji code and sends no escape character, even from a
    renderer that printed a name as it is; a long line is cut with its length."""
    from rich.table import Table

    from nodecast.report.tables import console

    out = console()
    out.print(f"note: {_HOSTILE}", soft_wrap=True)
    table = Table(title=_HOSTILE)
    table.add_column(_HOSTILE)
    table.add_row(_HOSTILE)
    out.print(table)
    out.print("n" * 1_000_000, soft_wrap=True)
    text = capsys.readouterr().out
    assert "\x1b" not in text and "\x07" not in text and "\U0001f604" not in text
    assert f"note: {_VISIBLE}" in text and text.count(_VISIBLE.split()[0]) >= 4
    assert "n" * 1000 in text and "(1,000,000 characters)" in text and "n" * 10_000 not in text


def test_render_shows_cells_titles_and_headers_as_text_on_any_console():
    """report.tables.render on a plain rich Console (markup on): a hostile name in a cell, the title, the caption or
    a header prints as text."""
    import io

    import pandas as pd
    from rich.console import Console

    from nodecast.report.tables import render

    out = io.StringIO()
    render(pd.DataFrame({_HOSTILE: [_HOSTILE], "ops": [3]}), f"title {_HOSTILE}", console=Console(file=out, width=400),
           caption=f"caption {_HOSTILE}")
    text = out.getvalue()
    assert "\x1b" not in text and "\x07" not in text
    for part in (f"title {_VISIBLE}", f"caption {_VISIBLE}", _VISIBLE.split(" :smile:")[0]):
        assert part in text, part


def test_plain_styles_only_its_own_text():
    """A header's bold file name: the bold ends where the plain text appended to it begins."""
    from nodecast.report.tables import plain

    line = plain("trace.csv", style="bold") + plain(" (nvprof; GPUs 0: [/])")
    assert line.plain == "trace.csv (nvprof; GPUs 0: [/])"
    assert [(s.start, s.end, str(s.style)) for s in line.spans] == [(0, 9, "bold")] and not line.style
