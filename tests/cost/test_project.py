"""Projection.summary: the total row covers the same ops in the source column and in every model's column."""

from __future__ import annotations

import numpy as np
import pytest

from nodecast.machines import load_machine
from nodecast.cost.project import NOT_PROJECTED, TOTAL_PROJECTED, project
from nodecast.traces.load import load_trace


def test_total_covers_only_projected_ops_and_the_rest_is_apart(shared_traces):
    """Kernels no chosen model projects (transfer models only) leave the total and form the 'not projected' row."""
    trace = load_trace(shared_traces / "nvprof_vectoradd-streams-1M_t4.nvvp")
    machine = load_machine("v100-pcie-server")
    s = project(trace, machine, machine, kind="transfer").summary().set_index("category")
    copies = s.loc[["dtoh_pinned", "htod_pinned"]]
    total, rest = s.loc[TOTAL_PROJECTED], s.loc[NOT_PROJECTED]
    assert total["ops"] == copies["ops"].sum() == 3000
    assert total["source_s"] == pytest.approx(copies["source_s"].sum())
    assert total["ahead_s"] == pytest.approx(copies["ahead_s"].sum())
    assert total["ahead_ops"] == total["ops"]
    kernels = trace["kind"] == 0
    assert rest["ops"] == int(kernels.sum()) == 1000
    assert rest["source_s"] == pytest.approx(trace.duration_ns[kernels].sum() * 1e-9)
    assert np.isnan(rest["ahead_s"])
    # together they account for every op (syncs are not GPU work)
    per_category = s.drop([TOTAL_PROJECTED, NOT_PROJECTED])["source_s"].sum()
    assert total["source_s"] + rest["source_s"] == pytest.approx(per_category)


def test_no_not_projected_row_when_every_op_is_projected():
    """A trace of copies only has a total row and no 'not projected' row."""
    trace = load_trace("sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x")
    s = project(trace, load_machine("titan"), load_machine("summit")).summary()
    assert s["category"].tolist()[-1] == TOTAL_PROJECTED
    assert NOT_PROJECTED not in s["category"].tolist()


def test_one_byte_given_reaches_the_transfer_models():
    """project(one_byte_s=...) sets L+O of the models that use one; a bad key is refused even if unused."""
    from nodecast.errors import InputError

    trace = load_trace("sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x")
    titan, summit = load_machine("titan"), load_machine("summit")
    base = project(trace, titan, summit, ["ahead", "ahead-no-latency"])
    given = project(trace, titan, summit, ["ahead", "ahead-no-latency"], one_byte_s={"htod_pinned": 5e-6})
    one = trace["bytes"] == 1
    no_latency = given.results["ahead-no-latency"].time_s[one]
    assert given.results["ahead"].time_s[one] - no_latency == pytest.approx(5e-6)
    assert base.results["ahead"].time_s[one] - no_latency == pytest.approx(0.96e-6)
    assert any("given (--one-byte-us htod_pinned=5)" in n for n in given.notes)
    with pytest.raises(InputError, match="unknown transfer kind"):
        project(trace, titan, summit, ["roofline"], one_byte_s={"pinned": 1e-6})


def test_compute_kernel_models_leave_collectives_to_the_collective_models(shared_cross_gpu, tmp_path):
    """NVIDIA's NCCL measurements as an op table: only the collective models time them (a kernel model would scale
    an NVLink transfer by SMs, clock or DRAM); on a trace without collectives nothing changes for them."""
    from nodecast.machines import load_machine
    from nodecast.traces.load import load_trace
    from nodecast.traces.op_table import from_aiconfigurator

    df = from_aiconfigurator(shared_cross_gpu / "aiconfigurator" / "nccl.parquet")
    path = tmp_path / "a100.csv"
    df[df["device"].str.contains("A100")].head(40).to_csv(path, index=False)
    proj = project(load_trace(path), load_machine("dgx-a100-80gb"), load_machine("h100-sxm5-server"))
    assert {m.kind for m in proj.models} == {"collective"}
    assert set(proj.results) == {"nccl", "nccl-scaled"}
