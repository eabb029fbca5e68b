"""Tests for nodecast.cost.ops: every op's time on the target, from the model registry, with provenance."""

from __future__ import annotations

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.graph.build import build
from nodecast.cost.ops import HOST, SOURCE, CostOptions, costs
from nodecast.workflows.forecast import read_trace_and_api
from nodecast.graph.opgraph import EdgeKind, OpKind
from nodecast.machines import load_machine, resolve_source
from nodecast.models.registry import get_models, model_chains
from nodecast.cost.project import project


@pytest.fixture
def run(shared_traces):
    """The 4-stream vector add on a T4 (Nsight Systems): trace, host records, graph, source node."""
    trace, api = read_trace_and_api(shared_traces / "nsys_vectoradd-streams_t4.sqlite")
    return trace, api, build(trace, api), resolve_source(trace, None)


def test_gpu_ops_take_the_first_model_of_their_chain_that_handles_them(run):
    """Every GPU op gets exactly what `project` gives it with the first model of its kind's chain that
    handles it; ops no model handles keep their source time (model "source"); host ops are unchanged."""
    trace, api, g, src = run
    tgt = load_machine("h100-pcie-server")
    c = costs(g, trace, src, tgt)
    chains = model_chains(None)
    del chains["collective"]  # a trace without collectives runs no collective chain (and says nothing of one)
    assert c.chains == chains
    order = [n for chain in chains.values() for n in chain]
    results = project(trace, src, tgt, order).results
    names = c.model_of()
    gpu = np.flatnonzero(g.gpu_mask())
    rows = g.ops["trace_row"][gpu]
    expected_model = np.full(len(gpu), SOURCE, dtype=object)
    expected_time = g.ops["source_dur_s"][gpu].copy()
    for name in order:
        t = results[name].time_s[rows]
        take = (expected_model == SOURCE) & np.isfinite(t)
        expected_model[take] = name
        expected_time[take] = t[take]
    assert names[gpu].tolist() == expected_model.tolist()
    np.testing.assert_allclose(c.duration_s[gpu], expected_time)
    copy = g.ops["kind"] == OpKind.COPY
    assert set(names[copy]) == {chains["transfer"][0]}
    host = g.ops["kind"] >= OpKind.API
    assert set(names[host]) == {HOST}
    assert np.array_equal(c.duration_s[host], g.ops["source_dur_s"][host])
    assert c.kept(g).sum() == int(np.count_nonzero(expected_model == SOURCE))


def test_kernels_without_a_model_keep_their_time_and_say_why(run):
    """With a kernel chain that handles nothing (roofline without metrics), kernels keep their source
    time, are counted as kept, and a note says which model declined and why."""
    trace, api, g, src = run
    c = costs(g, trace, src, load_machine("h100-pcie-server"), CostOptions(models=("ahead", "roofline")))
    kern = g.ops["kind"] == OpKind.KERNEL
    assert set(c.model_of()[kern]) == {SOURCE}
    assert np.array_equal(c.duration_s[kern], g.ops["source_dur_s"][kern])
    assert c.kept(g).sum() == kern.sum()
    assert any("kernel ops kept at their source time" in n and "roofline" in n for n in c.notes)


def test_kernels_kept_for_want_of_a_kernel_model_say_so_without_empty_parentheses(run):
    """--models with no kernel model: the note on the kept kernels says none of the models asked for is a kernel
    model, not "no kernel model handles them ()" (issue 18 item 5)."""
    trace, api, g, src = run
    c = costs(g, trace, src, load_machine("h100-pcie-server"), CostOptions(models=("ahead",)))
    kept = [n for n in c.notes if "kernel ops kept at their source time" in n]
    assert kept and not any("()" in n for n in c.notes)
    assert kept[0].endswith("none of the models asked for (ahead) is a kernel model")


def test_host_scale_scales_host_time_only(run):
    """--host-scale 0.5 halves API calls, host gaps and host release times; GPU ops and launch lags stay."""
    trace, api, g, src = run
    one = costs(g, trace, src, src)
    half = costs(g, trace, src, src, CostOptions(host_scale=0.5))
    host = g.ops["kind"] >= OpKind.API
    np.testing.assert_allclose(half.duration_s[host], 0.5 * one.duration_s[host])
    assert np.array_equal(half.duration_s[~host], one.duration_s[~host])
    gaps = g.kind == EdgeKind.PROGRAM_ORDER
    np.testing.assert_allclose(half.lag_s[gaps], 0.5 * g.lag_s[gaps])
    launch = g.kind == EdgeKind.LAUNCH
    assert launch.any() and np.array_equal(half.lag_s[launch], g.lag_s[launch])
    np.testing.assert_allclose(half.release_s[host], 0.5 * g.ops["release_s"][host])


def test_launch_latency_option_sets_every_launch_lag(run):
    """launch_latency_s replaces the source trace's calibrated launch latency on every LAUNCH edge only."""
    trace, api, g, src = run
    c = costs(g, trace, src, src, CostOptions(launch_latency_s=7e-6))
    launch = g.kind == EdgeKind.LAUNCH
    assert np.all(c.lag_s[launch] == 7e-6)
    assert np.array_equal(c.lag_s[~launch], g.lag_s[~launch])


def test_given_models_replace_the_registry_choice(run):
    """--models peak-bandwidth: copies come from that model, in the chain the user gave."""
    trace, api, g, src = run
    c = costs(g, trace, src, src, CostOptions(models=("peak-bandwidth",)))
    assert c.chains["transfer"] == ["peak-bandwidth"] and c.chains["kernel"] == []
    assert set(c.model_of()[g.ops["kind"] == OpKind.KERNEL]) == {SOURCE}
    assert set(c.model_of()[g.ops["kind"] == OpKind.COPY]) == {"peak-bandwidth"}


def test_default_chain_has_no_baseline():
    """The registry's default chain per kind lists only models that are not baselines."""
    for chain in model_chains(None).values():
        for model in get_models(chain):
            assert not model.baseline


@pytest.mark.parametrize(("options", "key"), [(CostOptions(host_scale=0.0), "--host-scale"),
                                               (CostOptions(host_scale=float("nan")), "--host-scale"),
                                               (CostOptions(launch_latency_s=-1e-6), "--launch-us"),
                                               (CostOptions(models=("no-such-model",)), "--models")])
def test_bad_options_are_one_line_errors(run, options, key):
    """Out-of-range options and unknown model names are InputErrors naming the option."""
    trace, api, g, src = run
    with pytest.raises(InputError) as err:
        costs(g, trace, src, src, options)
    assert key in str(err.value.message) or key in str(err.value)


def test_chain_falls_through_to_the_next_model_and_keeps_intervals(run, every_other):
    """In a chain, the first model that handles an op gives its time (and interval); the next one
    takes the ops it left."""
    trace, api, g, src = run
    c = costs(g, trace, src, src, CostOptions(models=(every_other, "ahead")))
    copy = np.flatnonzero(g.ops["kind"] == OpKind.COPY)
    even = copy[g.ops["trace_row"][copy] % 2 == 0]
    odd = copy[g.ops["trace_row"][copy] % 2 == 1]
    assert len(even) and len(odd)
    assert np.all(c.duration_s[even] == 1e-3) and np.all(c.low_s[even] == 0.5e-3) and np.all(c.high_s[even] == 3e-3)
    assert set(c.model_of()[odd]) == {"ahead"}
    assert c.has_interval
    prov = c.provenance(g).set_index("model")
    assert prov.loc[every_other, "ops"] == len(even) and prov.loc["ahead", "ops"] == len(odd)


def test_target_without_the_traces_gpus_is_said(graph_of):
    """Ops on a GPU the target lacks are mapped modulo its GPU count, with a note saying so."""
    from nodecast.cost.ops import _device_notes

    g = graph_of(2, [])
    g.ops["device"][:] = [0, 1]
    notes = _device_notes(g, load_machine("titan"))
    assert len(notes) == 1 and "GPU(s) [1]" in notes[0] and "mod 1" in notes[0]
    assert _device_notes(g, load_machine("dgx-a100")) == []


def test_models_run_only_while_ops_of_their_kind_are_left(run, every_other):
    """A model later in a chain runs only if the earlier ones left ops of its kind: after ahead has
    given every copy its time, the next transfer model is not run (and gives nothing)."""
    trace, api, g, src = run
    c = costs(g, trace, src, src, CostOptions(models=("ahead", every_other)))
    assert "ahead" in c.results and every_other not in c.results
    assert every_other not in set(c.model_of())
