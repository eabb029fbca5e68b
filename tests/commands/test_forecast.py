"""Tests for ``nodecast forecast`` (src/nodecast/commands/forecast.py): thin CLI over the forecast library."""

from __future__ import annotations

import json

import pandas as pd

from nodecast.cli import main

VECTORADD = "nvprof_vectoradd-1M_t4.nvvp"


def test_one_target_prints_the_forecast(shared_traces, capsys):
    """One --to: the end-to-end table (measured, replayed, forecast), categories, critical path, provenance."""
    assert main(["forecast", str(shared_traces / VECTORADD), "--to", "h100-pcie-server"]) == 0
    out = capsys.readouterr().out
    for text in ("end to end (first API call to last GPU op end)", "forecast on B", "Critical path by category",
                 "Where each op's time on B comes from", "note: host work kept as measured on A",
                 "more notes: --notes all prints them"):
        assert text in out


def test_json_and_outputs(shared_traces, tmp_path, capsys):
    """--json prints the summary; --trace writes measured and forecast timelines; -o and --table write tables;
    --png draws the one target's bar."""
    chrome, ops, table, png = tmp_path / "t.json", tmp_path / "ops.parquet", tmp_path / "cats.csv", tmp_path / "c.svg"
    assert main(["forecast", str(shared_traces / VECTORADD), "--to", "titan", "--json", "--trace", str(chrome),
                 "-o", str(ops), "--table", str(table), "--png", str(png)]) == 0
    captured = capsys.readouterr()
    s = json.loads(captured.out)
    assert s["target"] == "titan" and s["end_to_end_s"]["forecast"] > 0
    events = json.loads(chrome.read_text())["traceEvents"]
    names = [e["args"]["name"] for e in events if e.get("name") == "process_name"]
    assert names[0].startswith("measured on ") and names[1] == "forecast on titan"
    assert {"forecast_start_s", "model"} <= set(pd.read_parquet(ops).columns)
    assert "category" in pd.read_csv(table).columns
    assert "<svg" in png.read_text()
    assert captured.err.count("wrote ") == 4


def test_several_targets_give_one_table_and_a_chart(shared_traces, tmp_path, capsys):
    """--to a,b with --sweep: one row per node after the unchanged case's (A's times), a chart, a table file."""
    png, table = tmp_path / "c.png", tmp_path / "t.json"
    assert main(["forecast", str(shared_traces / VECTORADD), "--to", "titan,summit", "--sweep", "cpu.mem_gbps=50,100",
                 "--png", str(png), "--table", str(table), "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "titan[cpu.mem_gbps=50]" in out and "summit[cpu.mem_gbps=100]" in out
    assert png.stat().st_size > 1000
    rows = pd.read_json(table)
    assert len(rows) == 5 and rows["target"][0] == "unchanged (A's times)"


def test_timeline_outputs_need_one_target(shared_traces, tmp_path, capsys):
    """--trace with several targets is one line, exit 2, nothing written."""
    out = tmp_path / "t.json"
    assert main(["forecast", str(shared_traces / VECTORADD), "--to", "titan,summit", "--trace", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--trace" in err
    assert not out.exists()


def test_bad_options_are_one_line(shared_traces, tmp_path, capsys):
    """A bad --sweep key, a bad --host-scale and an unknown machine: one line each, exit 2, no traceback."""
    path = str(shared_traces / VECTORADD)
    for args in (["--to", "titan", "--sweep", "link.speed=3"], ["--to", "titan", "--host-scale", "-1"],
                 ["--to", "no-such-node"], ["--to", "titan", "-o", str(tmp_path / "x.txt")]):
        assert main(["forecast", path, *args]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
    assert not list(tmp_path.iterdir())


def test_jobs_below_one_is_refused(capsys):
    """--jobs 0 and --jobs -1 are one line and exit 2 with one target too (they were accepted: issue 18)."""
    for jobs in ("0", "-1"):
        assert main(["forecast", "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x", "--from", "titan",
                     "--to", "summit", "--jobs", jobs]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--jobs" in err


def test_models_help_names_the_default_chain():
    """forecast --help says what --models defaults to, and that is the registry's first model per kind."""
    from nodecast.commands.common import CHAIN_DEFAULT_HELP
    from nodecast.models.registry import model_chains

    chains = model_chains(None)
    assert "default: all" not in CHAIN_DEFAULT_HELP
    assert f"copies {chains['transfer'][0]}" in CHAIN_DEFAULT_HELP
    assert f"kernels {chains['kernel'][0]}" in CHAIN_DEFAULT_HELP


def test_kept_ops_note_in_plain_units(shared_traces, capsys):
    """The note on ops no model handles gives their time in units, never as an exponent (was '8e-06 s')."""
    assert main(["forecast", str(shared_traces / "nsys_sptrsv-levelset-ca_t4.sqlite"), "--to", "h100-sxm5-server",
                 "--notes", "all"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("note: ") and "no model handles" in x)
    assert "1 GPU op that no model handles keeps its time on A (3.17 µs in all" in line
