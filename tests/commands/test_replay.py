"""Tests for ``nodecast replay`` (src/nodecast/commands/replay.py): thin CLI over replay_trace."""

from __future__ import annotations

import json

import pandas as pd

from nodecast.cli import main


def test_json_output(shared_traces, capsys):
    """--json prints measured and replayed end-to-end and GPU-busy per device."""
    assert main(["replay", str(shared_traces / "nvprof_vectoradd-1M_t4.nvvp"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["end_to_end_s"]) == {"measured", "replayed", "error"}
    assert abs(out["end_to_end_s"]["error"]) < 0.02
    assert "0" in out["gpu_busy_s"]


def test_writes_chrome_trace_and_ops_table(shared_traces, tmp_path, capsys):
    """--trace writes both timelines as two processes; -o one row per op with both start times."""
    chrome, ops = tmp_path / "t.json", tmp_path / "ops.csv"
    assert main(["replay", str(shared_traces / "nvprof_vectoradd-1M_t4.nvvp"), "--trace", str(chrome),
                 "-o", str(ops)]) == 0
    assert "end to end" in capsys.readouterr().out
    events = json.loads(chrome.read_text())["traceEvents"]
    names = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert names == {"measured", "replayed"}
    table = pd.read_csv(ops)
    assert {"measured_start_s", "replayed_start_s", "kind"} <= set(table.columns)


def test_bad_output_suffix_fails_before_work(shared_traces, tmp_path, capsys):
    """An -o path with an unknown extension is a one-line error, exit 2, nothing written."""
    assert main(["replay", str(shared_traces / "nvprof_vectoradd-1M_t4.nvvp"), "-o", str(tmp_path / "x.txt")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "x.txt" in err
    assert not list(tmp_path.iterdir())


def test_copy_engines_must_be_positive(shared_traces, capsys):
    """--copy-engines 0 is refused in one line."""
    assert main(["replay", str(shared_traces / "nvprof_vectoradd-1M_t4.nvvp"), "--copy-engines", "0"]) == 2
    assert "--copy-engines" in capsys.readouterr().err


def test_replay_reads_a_packaged_sample(capsys):
    """`replay sample:NAME` reads the sample's host records as load_trace reads its GPU ops (was 'no such file')."""
    assert main(["replay", "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["source"] == "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"
