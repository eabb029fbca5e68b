"""A trace whose file name is not UTF-8 (bytes kept by the file system as they are) in HTML pages and in
folder-mode evaluate: the commands work and show the name with the odd byte as ``\\xff``."""

from __future__ import annotations

import json
import os

import pytest

from nodecast.cli import main
from nodecast.traces.load import sample_file

TITAN = "nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"
SUMMIT = "nvprof_ahead-bandwidthtest-htod-pinned_summit-v100"
#: b"tr\xffce.nvvp" as Python holds it (surrogateescape: the byte 0xff is the lone surrogate U+DCFF).
NAME = os.fsdecode(b"tr\xffce.nvvp")
SHOWN = "tr\\xffce.nvvp"


def _copy(sample: str, folder) -> str:  # noqa: ANN001
    folder.mkdir(exist_ok=True)
    path = folder / NAME
    path.write_bytes(sample_file(sample).read_bytes())
    return str(path)


@pytest.mark.parametrize("argv", [
    ["replay", "{trace}"],
    ["forecast", "{trace}", "--from", "titan", "--to", "summit"],
    ["project", "{trace}", "--from", "titan", "--to", "summit"],
    ["evaluate", "{trace}", "{other}", "--from", "titan", "--to", "summit"],
], ids=lambda a: a[0])
def test_html_page_of_a_trace_with_a_non_utf8_name(tmp_path, capsys, argv):
    """--html with such a trace: exit 0 and a UTF-8 page that names the trace as tr\\xffce.nvvp (was
    UnicodeEncodeError: surrogates not allowed, at the page's write)."""
    trace = _copy(TITAN, tmp_path / "a")
    other = _copy(SUMMIT, tmp_path / "b")
    page = tmp_path / "page.html"
    args = [a.format(trace=trace, other=other) for a in argv]
    assert main([*args, "--html", str(page)]) == 0, capsys.readouterr().err
    text = page.read_bytes().decode("utf-8")  # strict: the page is UTF-8
    assert SHOWN in text


def test_folder_evaluate_with_a_non_utf8_file_name(tmp_path, capsys):
    """Two folders whose one pair has a non-UTF-8 name: the pairs are evaluated, the pair is labelled
    tr\\xffce.nvvp in the JSON and the page (was UnicodeEncodeError when the pair's name went into a table)."""
    _copy(TITAN, tmp_path / "A")
    _copy(SUMMIT, tmp_path / "B")
    doc, page = tmp_path / "pairs.json", tmp_path / "pairs.html"
    assert main(["evaluate", str(tmp_path / "A"), str(tmp_path / "B"), "--from", "titan", "--to", "summit",
                 "--json", str(doc), "--html", str(page)]) == 0, capsys.readouterr().err
    result = json.loads(doc.read_text(encoding="utf-8"))
    assert result["wmape"][0]["pair"] == SHOWN and list(result["machines"]) == [SHOWN]
    assert SHOWN in page.read_bytes().decode("utf-8")


@pytest.mark.parametrize("argv", [["inspect", "{trace}"], ["forecast", "{trace}", "--from", "titan", "--to", "summit"]],
                         ids=lambda a: a[0])
def test_figure_of_a_trace_with_a_non_utf8_name(tmp_path, capsys, argv):
    """--png with such a trace: exit 0 and a PNG (was a matplotlib error: the title's lone surrogate)."""
    trace = _copy(TITAN, tmp_path / "a")
    png = tmp_path / "f.png"
    assert main([*(a.format(trace=trace) for a in argv), "--png", str(png)]) == 0, capsys.readouterr().err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
