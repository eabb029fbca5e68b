"""--host-memory and --one-byte-us on project and evaluate (the shared parser of commands.transfer_options),
and the source-scaled models beside the absolute ones in evaluate's table."""

from __future__ import annotations

import argparse

import pandas as pd
import pytest

from nodecast.cli import main
from nodecast.commands.transfer_options import add_transfer_options, transfer_options

K40_CSV = "nvprof-gputrace-csv_vectoradd_k40c.csv"
TITAN_PAGEABLE = "sample:nvprof_ahead-bandwidthtest-htod-pageable_titan-k20x"
SUMMIT_PAGEABLE = "sample:nvprof_ahead-bandwidthtest-htod-pageable_summit-v100"


def test_parser_is_reusable():
    """Any command can add the two options and get project()'s keyword arguments back."""
    p = argparse.ArgumentParser()
    add_transfer_options(p)
    args = p.parse_args(["--host-memory", "pinned", "--one-byte-us", "htod_pinned=2.5", "--one-byte-us", "all=1"])
    got = transfer_options(args)
    assert got["host_memory"] == "pinned"
    assert got["one_byte_s"] == pytest.approx({"htod_pinned": 2.5e-6, "all": 1e-6})
    assert transfer_options(p.parse_args([])) == {"one_byte_s": None, "host_memory": None}


def test_project_states_the_host_memory(shared_traces, tmp_path, capsys):
    """project --host-memory pinned on the nvprof CSV: no interval columns, and the note says the kind was stated."""
    out = tmp_path / "ops.csv"
    assert main(["project", str(shared_traces / K40_CSV), "--from", "tesla-k40", "--to", "h100-pcie-server",
                 "--models", "ahead", "--host-memory", "pinned", "-o", str(out)]) == 0
    assert "projected as pinned (--host-memory pinned)" in capsys.readouterr().out
    frame = pd.read_csv(out)
    assert "ahead_low_s" not in frame.columns
    assert main(["project", str(shared_traces / K40_CSV), "--from", "tesla-k40", "--to", "h100-pcie-server",
                 "--models", "ahead", "-o", str(out)]) == 0
    assert "if pinned; both ends are the interval" in capsys.readouterr().out
    assert {"ahead_low_s", "ahead_high_s"} <= set(pd.read_csv(out).columns)


def test_bad_host_memory_is_a_usage_error(capsys):
    """--host-memory with another word stops with argparse's usage error (exit 2)."""
    with pytest.raises(SystemExit) as err:
        main(["project", TITAN_PAGEABLE, "--from", "titan", "--to", "summit", "--host-memory", "mapped"])
    assert err.value.code == 2
    assert "invalid choice: 'mapped'" in capsys.readouterr().err


def test_evaluate_reports_scaled_models_beside_absolute(tmp_path):
    """evaluate's table types the source-scaled models ('scaled', 'scaled baseline') beside the absolute ones."""
    table = tmp_path / "t.csv"
    assert main(["evaluate", TITAN_PAGEABLE, SUMMIT_PAGEABLE, "--from", "titan", "--to", "summit",
                 "--table", str(table)]) == 0
    t = pd.read_csv(table).set_index("model")
    assert t.loc["ahead-scaled", "type"] == "scaled"
    assert t.loc["peak-bandwidth-scaled", "type"] == "scaled baseline"
    assert t.loc["ahead-eq9", "type"] == "model"
    assert t.loc["ahead", "htod_pageable"] <= 15.0 < t.loc["ahead-eq9", "htod_pageable"]
