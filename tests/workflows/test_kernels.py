"""``nodecast.workflows.kernels``: the kernels command's result (tables with a total, headline, errors against a target run)
and one kernel's roofline, on the real V100 Nsight Compute set of ../shared/data/traces."""

from __future__ import annotations

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.workflows.kernels import kernel_roofline, project_kernel_metrics, select_kernel
from nodecast.machines import load_machine


@pytest.fixture(scope="module")
def v100_set(request):
    """The 12 one-metric files of DeepCAM's LAMB step on a V100 (35 launches of 5 kernels), read once."""
    from pathlib import Path

    from nodecast.traces.ncu import read_ncu_csv

    traces = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"
    files = sorted(traces.glob("ncu-csv_v100_*.csv"))
    if len(files) != 12:
        pytest.skip(f"the 12 ncu-csv_v100_* files are not in {traces}")
    return read_ncu_csv(files), [str(f) for f in files]


@pytest.fixture(scope="module")
def machines():
    return load_machine("v100-pcie-server"), load_machine("h100-pcie-server")


def test_select_kernel_by_unique_part():
    """A part of a name selects the one kernel containing it; ambiguous or unknown parts are errors."""
    names = ["void a<1>(int)", "void ab<2>(int)", "cleanup(float*)"]
    assert select_kernel(names, "cleanup") == "cleanup(float*)"
    assert select_kernel(names, "void a<1>(int)") == "void a<1>(int)"
    with pytest.raises(InputError, match="2 kernels contain"):
        select_kernel(names, "void a")
    with pytest.raises(InputError, match="no kernel name contains"):
        select_kernel(names, "zzz")


def test_tables_end_with_the_total_of_their_rows(v100_set, machines):
    """Per kernel and per launch, the total row is the sum of the rows above it, in every time column."""
    metrics, files = v100_set
    result = project_kernel_metrics(metrics, *machines, models=["roofline", "dram-ratio"], files=files)
    for per_launch, rows in ((False, 5), (True, 35)):
        table = result.table(per_launch)
        assert len(table) == rows + 1 and table["kernel"].iat[-1] == "total"
        body, total = table.iloc[:-1], table.iloc[-1]
        for col in ("source_s", "roofline_low_s", "roofline_high_s", "roofline_s", "dram-ratio_s"):
            assert total[col] == pytest.approx(body[col].sum(), rel=1e-12)
    assert result.table()["launches"].iat[-1] == 35
    assert result.files == files and result.models == ["roofline", "dram-ratio"]


def test_headline_is_the_total_with_the_roofline_interval(v100_set, machines):
    """The headline is the measured total on the source and the roofline's total on the target, inside its interval."""
    metrics, _ = v100_set
    result = project_kernel_metrics(metrics, *machines, models=["dram-ratio", "roofline"])
    total = result.table().iloc[-1]
    source, target = result.headline()
    assert source.value == total["source_s"] and source.unit == "s"
    assert result.headline_model() == "roofline"
    assert (target.value, target.low, target.high) == (total["roofline_s"], total["roofline_low_s"], total["roofline_high_s"])
    assert target.low <= target.value <= target.high


def test_against_itself_the_unchanged_time_has_no_error(v100_set, machines):
    """Scored against the same launches, 'unchanged' (the source time) has 0 % error and every launch pairs;
    the headline adds the measured total and the roofline's WMAPE from the error table."""
    metrics, _ = v100_set
    result = project_kernel_metrics(metrics, *machines, models=["roofline"], measured=metrics)
    t = result.against_target
    assert (t.paired, t.unmatched_source, t.unmatched_target) == (35, 0, 0)
    errors = t.table.set_index("model")
    assert errors.loc["unchanged", "WMAPE"] == 0 and errors.loc["unchanged", "type"] == "reference"
    assert np.all(t.errors["unchanged"] == 0)
    assert t.measured_s == pytest.approx(result.table()["source_s"].iat[-1])
    measured, wmape = result.headline()[2:]
    assert measured.value == t.measured_s
    assert wmape.value == errors.loc["roofline", "WMAPE"] and wmape.unit == "%"


def test_one_kernels_roofline(v100_set, machines):
    """All launches of a kernel are summed unless one is picked; a launch out of range is an InputError."""
    metrics, _ = v100_set
    summed = kernel_roofline(metrics, *machines, "LAMBStage1")
    assert "LAMBStage1Functor" in summed.kernel and summed.what == "9 launches summed"
    one = kernel_roofline(metrics, *machines, "LAMBStage1", launch=2)
    assert one.what == "launch 2" and one.projection.time_s[0] < summed.projection.time_s[0]
    with pytest.raises(InputError, match=r"kernel has 9 launches \(0..8\)"):
        kernel_roofline(metrics, *machines, "LAMBStage1", launch=9)
