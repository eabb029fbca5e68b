"""--json [FILE] and --html FILE on forecast, replay, evaluate and project: printed or written, checked first."""

from __future__ import annotations

import json

import pytest

from nodecast.cli import main

PINNED = ("sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x", "sample:nvprof_ahead-bandwidthtest-htod-pinned"
          "_summit-v100")


def test_bare_json_prints_the_document_headline_first(capsys):
    """--json without a file prints only JSON (no table), its first key the headline numbers."""
    assert main(["project", PINNED[0], "--from", "titan", "--to", "summit", "--models", "ahead", "--json"]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert list(doc)[0] == "headline" and "┃" not in out
    assert doc["headline"][0]["label"] == "transfer GPU time on summit (B), ahead" and doc["headline"][0]["unit"] == "s"
    total = next(r for r in doc["summary"] if r["category"] == "total projected")
    assert doc["headline"][0]["value"] == total["ahead_s"]


def test_json_file_is_written_and_the_tables_still_printed(tmp_path, capsys):
    """--json FILE writes the document and prints the tables as without it; stderr says what was written."""
    out = tmp_path / "ev.json"
    assert main(["evaluate", *PINNED, "--from", "titan", "--to", "summit", "--models", "ahead", "--json",
                 str(out)]) == 0
    captured = capsys.readouterr()
    assert "WMAPE (%) of projected GPU time" in captured.out and captured.err == f"wrote {out}\n"
    doc = json.loads(out.read_text())
    ahead = next(r for r in doc["wmape"] if r["model"] == "ahead")
    e2e = next(r for r in doc["whole_run"] if r["quantity"].startswith("end to end"))
    assert [n["value"] for n in doc["headline"][:3]] == [e2e["actual on B"], e2e["forecast on B"], 100 * e2e["error"]]
    assert doc["headline"][3] == {"label": "htod_pinned: lowest per-op WMAPE (ahead)", "value": ahead["htod_pinned"],
                                  "unit": "%", "low": None, "high": None,
                                  "note": "best of 1 model over 2,900 ops; keeping A's times: 678.9 %"}


@pytest.mark.parametrize("argv", [
    ["project", "MISSING.sqlite", "--from", "titan", "--to", "summit"],
    ["evaluate", "MISSING_A.sqlite", "MISSING_B.sqlite", "--from", "titan", "--to", "summit"],
    ["forecast", "MISSING.sqlite", "--to", "summit"],
    ["replay", "MISSING.sqlite"],
])
@pytest.mark.parametrize("option,name,why", [("--html", "report.txt", "report.txt"),
                                             ("--json", "doc.csv", "doc.csv"),
                                             ("--html", "no/such/folder/r.html", "folder does not exist")])
def test_bad_output_paths_fail_before_reading_the_trace(argv, option, name, why, tmp_path, capsys):
    """A --html or --json path with the wrong extension or no folder is one line naming it, exit 2, before the
    (missing) trace is read, nothing written."""
    assert main([*argv, option, str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and why in err and "MISSING" not in err
    assert list(tmp_path.iterdir()) == []


def test_inspect_json_file_holds_table_one_under_the_headline(tmp_path, capsys):
    """inspect --json FILE writes the characterization; its headline is Table I's kernel and transfer time and
    share, and the tables are still printed."""
    out = tmp_path / "inspect.json"
    assert main(["inspect", PINNED[0], "--json", str(out)]) == 0
    assert "GPU time (AHEAD Table I)" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    row = doc["table_one"]
    assert [n["value"] for n in doc["headline"]] == [row["kernels_s"], row["transfers_s"],
                                                     row["transfer_share_pct"] / 100]
    assert doc["counts"]["transfers"] == row["transfer_count"] > 0


def test_replay_json_says_which_replay_path_ran(shared_traces, capsys):
    """replay --json carries the replay path and why, as forecast's does."""
    assert main(["replay", str(shared_traces / "nvprof_vectoradd-1M_t4.nvvp"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["replay"]["path"] in ("single-pass", "event") and doc["replay"]["reason"]
