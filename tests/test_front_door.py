"""``import nodecast`` gives the workflows, the loaders and their result types (docs/api.md), imported on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest

import nodecast

WORKFLOWS = ("forecast", "replay", "project", "evaluate", "simulate", "load_trace", "load_machine")
RESULTS = ("ForecastResult", "ReplayResult", "Projection", "Evaluation", "SimResult", "Trace", "Machine")


def test_every_name_of_the_front_door_resolves():
    for name in nodecast.__all__:
        assert getattr(nodecast, name) is not None, name
    assert set(WORKFLOWS + RESULTS) <= set(nodecast.__all__)
    assert set(nodecast.__all__) <= set(dir(nodecast))


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'forcast'"):
        nodecast.forcast  # noqa: B018


def test_importing_nodecast_imports_none_of_its_modules():
    code = "import sys, nodecast; print(sorted(m for m in sys.modules if m.startswith('nodecast')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['nodecast']"


def test_the_front_door_gives_what_the_workflows_give(shared_traces):
    from nodecast.workflows.forecast import forecast_trace

    path = shared_traces / "nsys_vectoradd-streams_t4.sqlite"
    mine = nodecast.forecast(path, "h100-pcie-server")
    theirs = forecast_trace(path, "h100-pcie-server")
    assert isinstance(mine, nodecast.ForecastResult)
    assert mine.end_to_end_s == theirs.end_to_end_s
    proj = nodecast.project(path, "h100-pcie-server")
    assert isinstance(proj, nodecast.Projection)
    assert isinstance(nodecast.load_trace(path), nodecast.Trace)
    assert isinstance(nodecast.load_machine("h100-pcie-server"), nodecast.Machine)


def test_evaluate_picks_both_nodes_from_the_traces(shared_traces):
    a = shared_traces / "nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x.nvvp"
    b = shared_traces / "nvprof_ahead-bandwidthtest-htod-pinned_summit-v100.nvvp"
    ev = nodecast.evaluate(a, b, "titan", "summit")
    assert isinstance(ev, nodecast.Evaluation)
    assert ev.whole is not None
    with pytest.raises(nodecast.InputError):
        nodecast.evaluate(a, b, "summit", "titan")  # the K20X trace named as the V100 node


def test_simulate_runs_an_application(starpu_data):
    setup = nodecast.SimSetup(starpu_dir=starpu_data / "sampling", starpu_machine="attila")
    result = nodecast.simulate("cholesky", 4800, scheduler="dmdas", setup=setup)
    assert isinstance(result, nodecast.SimResult)
    assert result.makespan_s > 0
    with pytest.raises(nodecast.InputError, match="no matrix size"):
        nodecast.simulate("lu", setup=setup)
