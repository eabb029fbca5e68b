"""``nodecast collectives``: the table, --json/--png/--html, and one line with exit code 2 on bad input."""

from __future__ import annotations

import json

import pytest

from nodecast.cli import main


def test_prints_nodes_side_by_side(capsys):
    """Two nodes: each size's row holds both nodes' time, busbw and NCCL's algorithm/protocol."""
    assert main(["collectives", "--to", "dgx-a100,h100-sxm5-server", "--sizes", "1KiB,1GiB"]) == 0
    out = capsys.readouterr().out
    assert "dgx-a100" in out and "h100-sxm5-server" in out
    assert "ring/simple" in out and "nvls/simple" in out and "1 GiB" in out


def test_json_png_and_html(tmp_path, capsys):
    """--json holds the headline, the rows with nccl-tests' fields and the notes; --png and --html are written."""
    js, png, page = tmp_path / "c.json", tmp_path / "c.png", tmp_path / "c.html"
    assert main(["collectives", "--to", "dgx-b200", "--op", "reduce_scatter", "--sizes", "64KiB:64MiB", "--gpus", "4",
                 "--dtype", "fp32", "--json", str(js), "--png", str(png), "--html", str(page)]) == 0
    doc = json.loads(js.read_text())
    assert doc["op"] == "reduce_scatter" and doc["dtype"] == "fp32" and doc["machines"] == ["dgx-b200"]
    row = doc["rows"][0]
    assert set(row) == {"machine", "op", "dtype", "gpus", "size_bytes", "elements", "time_s", "algbw_bps",
                        "busbw_bps", "algorithm", "protocol"}
    assert row["gpus"] == 4 and row["size_bytes"] == 65536 and row["elements"] == 16384
    assert doc["headline"][0]["unit"] == "B/s" and doc["notes"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "busbw against message size" in page.read_text()


@pytest.mark.parametrize(("argv", "words"), [
    (["--to", "dgx-a100", "--gpus", "16"], "group of 16 GPUs on a node of 8"),
    (["--to", "dgx-a100", "--sizes", "8B:lots"], "cannot read size"),
    (["--to", "dgx-a100", "--sizes", "3,1KiB"], "not a whole number of bf16 elements"),
    (["--to", "dgx-a100", "--op", "allfoo"], "unknown collective"),
    (["--to", "dgx-a100", "--dtype", "int4"], "unknown NCCL data type"),
    (["--to", "dgx-a100,dgx-a100"], "listed twice"),
    (["--to", "a100-sxm4-80gb"], "has one GPU"),
])
def test_bad_input_exits_2_with_one_line(argv, words, capsys, tmp_path):
    """Bad input: exit code 2, one line on stderr, nothing on stdout, no file written."""
    js = tmp_path / "c.json"
    assert main(["collectives", *argv, "--json", str(js)]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and words in captured.err
    assert captured.out == "" and not js.exists()
