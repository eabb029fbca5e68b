"""The StarPU-like runtime: correctness of schedules, exact small cases, memory, determinism."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodecast.errors import InputError
from nodecast.graph.opgraph import OpGraph
from nodecast.graph.apps import cholesky, lu
from nodecast.graph.taskgraph import RW, R, W, TaskGraph, critical_path_s
from nodecast.runtime.outputs import chrome_trace
from nodecast.models.history import KernelModels
from nodecast.engine.platform import Platform
from nodecast.runtime.options import Overheads, RuntimeOptions
from nodecast.runtime.simulation import Simulation
from nodecast.runtime.schedulers import SCHEDULERS

pytestmark = pytest.mark.shared  # needs ../shared/data/starpu


@pytest.fixture
def attila(starpu_data):
    return Platform.from_starpu(starpu_data / "sampling" / "bus" / "attila.platform.v4.xml")


@pytest.fixture
def models(starpu_data):
    return KernelModels(starpu_data / "sampling" / "codelets" / "45", "attila")


def run(graph, plat, models, **kw):
    kw.setdefault("trace", True)
    return Simulation(graph, plat, models, RuntimeOptions(**kw)).run()


def check_schedule(graph, res):
    """Every task ran once, after its predecessors, and no worker ran two kernels at once."""
    if isinstance(graph, TaskGraph):
        graph = graph.build()
    tasks = {t["task"]: t for t in res.trace["tasks"]}
    assert len(tasks) == len(graph)
    for t in range(len(graph)):
        me = tasks[graph.names[t]]
        for p in graph.preds(t):
            assert tasks[graph.names[p]]["end_s"] <= me["start_s"] + 1e-12
    by_worker: dict[str, list] = {}
    for t in res.trace["tasks"]:
        by_worker.setdefault(t["worker"], []).append((t["start_s"], t["end_s"]))
    for spans in by_worker.values():
        spans.sort()
        for (a0, a1), (b0, _) in zip(spans, spans[1:], strict=False):
            assert a1 <= b0 + 1e-12
    assert max(t["end_s"] for t in res.trace["tasks"]) == pytest.approx(res.makespan_s)


def test_one_potrf_on_one_gpu_is_exact(attila, models):
    """One POTRF on one GPU: cudaMalloc + transfer queueing + latency + size/bottleneck + kernel mean."""
    g = TaskGraph()
    a = g.add_data("A", 3686400)
    g.add_task("chol_model_potrf", [(a, RW)], async_ok=False)
    res = run(g, attila.with_gpu_count(1), models)
    expected = 175e-6 + 10e-6 + 9e-6 + 3686400 / 6008661719.001335 + 44253.57e-6
    assert res.makespan_s == pytest.approx(expected, rel=1e-12)


def test_no_overheads_drops_table2_costs(attila, models):
    """Without overheads the same run is the transfer plus the kernel."""
    g = TaskGraph()
    a = g.add_data("A", 3686400)
    g.add_task("chol_model_potrf", [(a, RW)], async_ok=False)
    res = run(g, attila.with_gpu_count(1), models, overheads=Overheads.none())
    assert res.makespan_s == pytest.approx(9e-6 + 3686400 / 6008661719.001335 + 44253.57e-6, rel=1e-12)


def test_write_only_data_is_not_transferred(attila, models):
    """A task that only writes its data allocates it on the GPU without copying it."""
    g = TaskGraph()
    a = g.add_data("A", 3686400)
    g.add_task("chol_model_potrf", [(a, W)], async_ok=False)
    res = run(g, attila.with_gpu_count(1), models)
    assert "RAM->CUDA0" not in res.transfers  # (an idle write-back to RAM may follow: the GPU has no clean chunk)
    assert res.makespan_s == pytest.approx(175e-6 + 44253.57e-6, rel=1e-12)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_every_scheduler_runs_cholesky_correctly(attila, models, scheduler):
    """Each policy runs all tasks of a 6-block Cholesky in dependency order."""
    g = cholesky(960 * 6)
    res = run(g, attila, models, scheduler=scheduler)
    check_schedule(g, res)
    assert res.gflops > 0


def test_cpu_and_gpu_workers_together(attila, models):
    """With workers='all' the 9 CPU workers take part and the schedule stays valid."""
    g = cholesky(960 * 8)
    res = run(g, attila, models, workers="all", scheduler="eager")
    check_schedule(g, res)
    assert len(res.workers) == 3 + 9
    assert sum(w.tasks for w in res.workers if w.kind == "cpu") > 0


def test_lu_double_runs(attila, models):
    """Double-precision LU uses the dlu models and completes."""
    g = lu(960 * 5, precision="double")
    res = run(g, attila, models)
    check_schedule(g, res)


def test_small_gpu_memory_forces_evictions_and_stays_within_capacity(attila, models):
    """With room for 12 tiles per GPU, data is evicted and written back, and no GPU exceeds its memory."""
    plat = attila.with_gpu_memory(12 * 3686400 / 0.9 + 2**21)
    g = cholesky(960 * 8)
    res = run(g, plat, models, scheduler="dmdar")
    check_schedule(g, res)
    assert res.evictions > 0 and res.purges > 0
    for n in res.nodes:
        assert n.peak_bytes <= n.capacity_bytes


def test_task_larger_than_gpu_memory_is_an_input_error(attila, models):
    """A GEMM whose three tiles cannot fit in a GPU is rejected up front."""
    plat = attila.with_gpu_memory(2 * 3686400)
    with pytest.raises(InputError, match="a task needs 11059200 B of data"):
        Simulation(cholesky(960 * 3), plat, models, RuntimeOptions())


def test_unknown_scheduler_is_an_input_error(attila, models):
    """A misspelt scheduler lists the valid ones."""
    with pytest.raises(InputError, match="unknown scheduler 'dmdx'"):
        Simulation(cholesky(960 * 2), attila, models, RuntimeOptions(scheduler="dmdx"))


def test_negative_cpu_worker_count_is_an_input_error(attila, models):
    """The library refuses what the CLI refuses: a negative number of CPU workers."""
    with pytest.raises(InputError, match="CPU workers must be >= 0"):
        Simulation(cholesky(960 * 2), attila, models, RuntimeOptions(workers="all", n_cpu_workers=-1))


def test_missing_kernel_model_is_an_input_error(attila, models):
    """A DAG using a kernel without a model fails before simulating, naming the kernel."""
    g = TaskGraph()
    a = g.add_data("A", 100)
    g.add_task("no_such_kernel", [(a, R)])
    with pytest.raises(InputError, match="no_such_kernel"):
        Simulation(g, attila, models, RuntimeOptions())


def test_same_inputs_and_seed_give_identical_outputs(attila, starpu_data):
    """Two runs with sampled durations and the same seed produce byte-identical summaries and traces."""
    outs = []
    for _ in range(2):
        m = KernelModels(starpu_data / "sampling" / "codelets" / "45", "attila", mode="normal", seed=11)
        res = run(cholesky(960 * 6), attila, m, scheduler="random", seed=5)
        outs.append(json.dumps(res.summary(), sort_keys=True) + json.dumps(chrome_trace(res), sort_keys=True))
    assert outs[0] == outs[1]


def test_more_gpus_and_more_bandwidth_do_not_slow_a_mid_size_cholesky(attila, models):
    """What-ifs move the prediction the expected way: 2 GPUs are slower than 3, doubled bandwidth is not slower."""
    g = cholesky(960 * 12)
    base = run(g, attila, models, trace=False).makespan_s
    assert run(g, attila.with_gpu_count(2), models, trace=False).makespan_s > base
    assert run(g, attila.with_bandwidth_scale(2.0), models, trace=False).makespan_s <= base * 1.01


def test_makespan_is_at_least_the_critical_path(attila, models):
    """The makespan is never below the graph's longest path of fastest kernel durations."""
    g = lu(960 * 6)
    sim = Simulation(g, attila, models, RuntimeOptions())
    fastest = [min(sim.type_len[sim.task_type[t]]) for t in range(len(g))]
    res = sim.run()
    assert res.makespan_s >= critical_path_s(g, fastest)


def test_cm02_sharing_runs(attila, models):
    """SimGrid-CM02 (RTT-weighted) sharing is available as an option."""
    res = run(cholesky(960 * 5), attila, models, sharing="cm02", trace=False)
    assert res.options["sharing"] == "cm02" and res.gflops > 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.sampled_from([R, W, RW])), min_size=1, max_size=25),
    st.sampled_from(["eager", "dmda", "dmdas", "ws", "heft"]),
)
def test_random_graphs_always_complete_in_order(attila, models, accesses, scheduler):
    """Random small DAGs of GEMM-sized tasks complete under every policy with precedences respected."""
    g = TaskGraph()
    for i in range(6):
        g.add_data(f"d{i}", 3686400)
    for a, b, m in accesses:
        acc = [(a, R), (b, m)] if a != b else [(a, m)]
        g.add_task("chol_model_trsm" if a != b else "chol_model_potrf", acc, async_ok=a != b)
    res = run(g, attila, models, scheduler=scheduler)
    check_schedule(g, res)


# -- the simulator runs OpGraphs (issue 13, phase C) --------------------------------------------------------------

@pytest.mark.parametrize(("graph", "scheduler", "makespan_s", "events"), [
    (lambda: cholesky(19200), "dmda", 2.325248368149491, 6747),
    (lambda: lu(9600, precision="double"), "dmdar", 1.343282517464684, 2665),
])
def test_opgraph_runs_give_the_task_graph_results_exactly(attila, models, graph, scheduler, makespan_s, events):
    """Cholesky 19200 (dmda) and double LU 9600 (dmdar) on attila give, to the last bit, the makespan and event count
    the simulator gave when it ran its own TaskGraph type (recorded with nodecast at commit e2e4233)."""
    res = run(graph(), attila, models, scheduler=scheduler, trace=False)
    assert res.makespan_s == makespan_s and res.events == events


def test_a_builder_runs_as_its_built_graph(attila, models):
    """Simulation accepts a TaskGraph builder and gives the same schedule as for the OpGraph it builds."""
    b = TaskGraph()
    hs = [b.add_data(f"A{i}", 3686400) for i in range(3)]
    b.add_task("chol_model_potrf", [(hs[0], RW)], async_ok=False)
    for h in hs[1:]:
        b.add_task("chol_model_trsm", [(hs[0], R), (h, RW)])
    first = run(b, attila, models).trace
    assert first == run(b.build(), attila, models).trace and len(first["tasks"]) == 3


def test_graphs_the_simulator_cannot_run_are_refused(attila, models):
    """A traced program's graph (no data accesses) and a task already placed on a device are ValueErrors naming why."""
    g = cholesky(960 * 2)
    trace_like = OpGraph(ops=g.ops, indptr=g.indptr, src=g.src, kind=g.kind, anchor=g.anchor, lag_s=g.lag_s,
                         order=g.order, names=g.names, origin_ns=0)
    with pytest.raises(ValueError, match="not a task graph"):
        Simulation(trace_like, attila, models)
    g.ops["device"][1] = 0
    with pytest.raises(ValueError, match=r"task 'TRSM\(1,0\)' is placed on device 0"):
        Simulation(g, attila, models)
