"""``nodecast.workflows.parallel``: the one Dask runner of the simulator's sweeps and the forecast's targets."""

from __future__ import annotations

import pytest

from nodecast.errors import InputError
from nodecast.workflows import parallel

PINNED_A = "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"


def test_jobs_run_here_with_one_job_or_one_case_and_no_scheduler():
    """One at a time in this process (Dask not imported) unless several jobs and cases, or a scheduler address."""
    assert parallel.runs_here(1, 5, None) and parallel.runs_here(4, 1, None) and parallel.runs_here(4, 0, None)
    assert not parallel.runs_here(2, 2, None)
    assert not parallel.runs_here(1, 1, "tcp://head:8786")


def test_run_here_gives_results_in_order_and_says_each_job_done():
    """``run_here``: every job's result in the order of the jobs, ``progress(i)`` after job ``i``."""
    done: list[int] = []
    assert parallel.run_here(lambda i: i * 10, 3, done.append) == [0, 10, 20]
    assert done == [0, 1, 2]
    assert parallel.run_here(lambda i: i, 2, None) == [0, 1]


def test_an_unreachable_scheduler_is_one_line_with_the_callers_hint():
    """An address that names no scheduler: the InputError on --cluster, with what the caller says to do."""
    with pytest.raises(InputError, match="^--cluster: cannot reach a Dask scheduler at 'nonsense' ") as err:
        parallel.run_on_dask(abs, 1, lambda i, shared: (i,), shared={}, jobs=1, address="nonsense",
                             connect_hint="Start one or leave --cluster out")
    assert err.value.hint == "Start one or leave --cluster out"


def _here(fn, count, args, *, shared, jobs, address, progress=None, order=None, name, connect_hint=None):
    """``run_on_dask`` without Dask: what is scattered is passed as it is; records the call."""
    calls.append((name, jobs, list(order) if order is not None else None))
    results = [None] * count
    for i in (range(count) if order is None else order):
        results[i] = fn(*args(i, {key: list(objs) for key, objs in shared.items()}))
        if progress is not None:
            progress(i)
    return results


calls: list = []


def test_sweeps_and_comparisons_both_run_on_the_one_runner(monkeypatch):
    """``simulate_sweep.run_cases`` and ``targets.compare_targets`` with two jobs submit to ``parallel.run_on_dask``
    (each its own task names, the sweep biggest case first) and get the rows one process gives."""
    from nodecast.runtime.setup import SimSetup, platform_and_models
    from nodecast.runtime.simulation import RuntimeOptions
    from nodecast.workflows import simulate_sweep as sweep
    from nodecast.workflows import targets
    from nodecast.workflows.forecast import read_trace_and_api

    calls.clear()
    monkeypatch.setattr(parallel, "run_on_dask", _here)
    plat, models = platform_and_models(SimSetup(machine="summit", roofline_missing=True))
    cases = [sweep.Case(RuntimeOptions(), "cholesky", n, 960) for n in (1920, 2880)]
    done: list[int] = []
    rows = sweep.run_cases(cases, plat, models, jobs=2, progress=done.append)
    assert [r["tasks"] for r in rows] == [4, 10] and sorted(done) == [0, 1]
    trace, api = read_trace_and_api(PINNED_A)
    specs = targets.target_specs(["titan", "summit"], [])
    there = targets.compare_targets(trace, api, specs, source="titan", jobs=2).table()
    here = targets.compare_targets(trace, api, specs, source="titan", jobs=1).table()
    assert calls == [("nodecast-case", 2, [1, 0]), ("nodecast-forecast", 2, None)]
    assert there.equals(here)
