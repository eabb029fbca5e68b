"""``--json`` writes JSON that other tools read: no bare NaN or Infinity (JSON.parse in browsers and Node rejects
them), null where a number is missing; the HTML page's embedded data is strict JSON too."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nodecast.cli import main

SHARED_TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"
NVVP = "nvprof_vectoradd-1M_t4.nvvp"
NODE = shutil.which("node")


def strict_loads(text: str):
    """``json.loads`` as JSON.parse reads: the bare words NaN, Infinity and -Infinity are errors."""
    def refuse(word: str):
        raise ValueError(f"not JSON: {word}")

    return json.loads(text, parse_constant=refuse)


def node_parses(path: Path) -> None:
    """Node's JSON.parse reads the file (skips when node is not installed)."""
    if NODE is None:
        pytest.skip("node is not installed")
    script = "JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'))"
    proc = subprocess.run([NODE, "-e", script, str(path)], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def projected(tmp_path_factory) -> tuple[Path, Path]:
    """``project`` of the vectoradd nvvp (transfers and one kernel: each model leaves a category unprojected) onto
    an H100: its --json document and its --html page."""
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"{SHARED_TRACES} is absent (real traces live beside the repository, not in a clone)")
    folder = tmp_path_factory.mktemp("project")
    doc, page = folder / "project.json", folder / "project.html"
    assert main(["project", str(SHARED_TRACES / NVVP), "--to", "h100-pcie-server", "--json", str(doc),
                 "--html", str(page)]) == 0
    return doc, page


def test_project_json_has_null_where_a_model_projected_nothing(projected):
    """The per-category summary: a transfer model's kernel time and a kernel model's transfer time are null (the
    model projected no op there: ``_ops`` is 0), not NaN; Node reads the file."""
    doc = strict_loads(projected[0].read_text())
    rows = {r["category"]: r for r in doc["summary"]}
    assert rows["kernel"]["ahead_s"] is None and rows["kernel"]["ahead_ops"] == 0
    assert rows["htod_pageable"]["dram-ratio_s"] is None and rows["htod_pageable"]["dram-ratio_ops"] == 0
    assert rows["kernel"]["dram-ratio_s"] > 0
    node_parses(projected[0])


def test_project_page_embeds_strict_json(projected):
    """The page's figure data (Bokeh's document, parsed by the page with JSON.parse) holds no bare NaN."""
    text = projected[1].read_text(encoding="utf-8")
    literals = re.findall(r"const docs_json = '(.*?)';", text, re.S)
    assert len(literals) == 1
    # Bokeh writes the JSON as a JS string: HTML-escaped, single quotes as &#x27;, backslashes doubled.
    data = strict_loads(html.unescape(literals[0].replace("&#x27;", "'").replace("\\\\", "\\")))
    assert data


def test_kernels_json_has_null_for_the_total_rows_bound(shared_traces, tmp_path):
    """``kernels`` on the shared V100 ncu set: the total row has no bound (null, not NaN); Node reads the file."""
    paths = sorted(shared_traces.glob("ncu-csv_v100_*.csv"))
    if len(paths) != 12:
        pytest.skip(f"the 12 ncu-csv_v100_* files are not in {shared_traces}")
    out = tmp_path / "kernels.json"
    assert main(["kernels", *map(str, paths), "--from", "v100-pcie-server", "--to", "h100-pcie-server",
                 "--json", str(out)]) == 0
    doc = strict_loads(out.read_text())
    assert doc["total"]["bound"] is None and doc["total"]["launches"] == 35
    assert all(isinstance(r["bound"], str) for r in doc["per_kernel"])
    node_parses(out)


def test_json_printed_to_stdout_is_strict(shared_traces, capsys):
    """A bare --json prints the same strict document."""
    assert main(["project", str(shared_traces / NVVP), "--to", "h100-pcie-server", "--models", "ahead",
                 "--json"]) == 0
    doc = strict_loads(capsys.readouterr().out)
    assert {r["category"]: r["ahead_s"] for r in doc["summary"]}["kernel"] is None
