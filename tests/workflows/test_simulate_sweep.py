"""Sweeps: the same results one at a time or on a local Dask cluster, in the order asked."""

from __future__ import annotations

import json

import pytest

from nodecast.cli import main
from nodecast.errors import InputError
from nodecast.models.history import KernelModels
from nodecast.engine.platform import Platform
from nodecast.runtime.simulation import RuntimeOptions
from nodecast.workflows.simulate_sweep import Case, run_case, run_cases


def test_task_count_estimate_is_exact():
    from nodecast.graph.apps import cholesky, lu

    for app, build in (("cholesky", cholesky), ("lu", lu)):
        for n in (960, 1920, 9600, 20160):
            assert Case(RuntimeOptions(), app, n, 960).n_tasks() == len(build(n, 960))
    assert Case(RuntimeOptions(), "cholesky", 72000, 960).n_tasks() == 73150  # the benchmark's case


@pytest.fixture
def attila(starpu_data):
    return Platform.from_starpu(starpu_data / "sampling" / "bus" / "attila.platform.v4.xml")


def _models(starpu_data, **kw):
    return KernelModels(starpu_data / "sampling" / "codelets" / "45", "attila", **kw)


def _cases():
    return [
        Case(RuntimeOptions(scheduler=s), "cholesky", n, 960) for n in (9600, 14400) for s in ("dmda", "ws")
    ] + [Case(RuntimeOptions(scheduler="dmdas"), "lu", 9600, 960)]


def _strip_wall(rows):
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]


@pytest.mark.shared
def test_dask_cluster_gives_the_serial_results_in_order(attila, starpu_data):
    cases = _cases()
    done = []
    serial = run_cases(cases, attila, _models(starpu_data), jobs=1)
    parallel = run_cases(cases, attila, _models(starpu_data), jobs=2, progress=done.append)
    assert _strip_wall(parallel) == _strip_wall(serial)
    assert sorted(done) == list(range(len(cases)))
    # the order is the cases' own: the LU case is last, with LU's task count
    assert serial[-1]["tasks"] == 10 + 2 * 45 + 285  # GETRF, TRSM pairs, GEMMs of 10 x 10 tiles
    assert serial[0]["tasks"] != serial[2]["tasks"]


@pytest.mark.shared
def test_sampled_run_draws_the_same_alone_or_after_others(attila, starpu_data):
    """Each simulation has its own generator: a sweep's second run equals that run alone."""
    opt = RuntimeOptions(scheduler="dmda")
    case = Case(opt, "cholesky", 9600, 960)
    alone = run_case(case, attila, _models(starpu_data, mode="normal", seed=7))
    shared = _models(starpu_data, mode="normal", seed=7)
    first, second = run_cases([Case(opt, "cholesky", 14400, 960), case], attila, shared, jobs=1)
    assert second["makespan_s"] == alone["makespan_s"]
    other_seed = run_case(case, attila, _models(starpu_data, mode="normal", seed=8))
    assert other_seed["makespan_s"] != alone["makespan_s"]


@pytest.mark.shared
def test_input_error_in_a_worker_keeps_its_message(attila, starpu_data):
    bad = [Case(RuntimeOptions(), "cholesky", 9600, 960), Case(RuntimeOptions(), "cholesky", 10000, 960)]
    with pytest.raises(InputError) as serial:
        run_cases(bad, attila, _models(starpu_data), jobs=1)
    with pytest.raises(InputError) as parallel:
        run_cases(bad, attila, _models(starpu_data), jobs=2)
    assert str(parallel.value) == str(serial.value)
    assert "960" in str(serial.value)


@pytest.mark.shared
def test_jobs_must_be_positive(attila, starpu_data):
    with pytest.raises(ValueError):
        run_cases(_cases(), attila, _models(starpu_data), jobs=0)


@pytest.mark.shared
def test_cli_sweep_with_jobs_matches_one_at_a_time(starpu_data, tmp_path, capsys):
    common = [
        "simulate",
        "cholesky",
        "--sizes",
        "9600,14400",
        "--scheduler",
        "dmda,eager",
        "--starpu-dir",
        str(starpu_data / "sampling"),
        "--starpu-machine",
        "attila",
    ]
    assert main([*common, "--jobs", "1", "--json", str(tmp_path / "one.json")]) == 0
    assert main([*common, "--jobs", "2", "--json", str(tmp_path / "two.json")]) == 0
    one = json.loads((tmp_path / "one.json").read_text())
    assert (tmp_path / "two.json").read_bytes() == (tmp_path / "one.json").read_bytes()
    assert [(r["matrix_size"], r["scheduler"]) for r in one] == [(9600, "dmda"), (9600, "eager"), (14400, "dmda"), (14400, "eager")]


@pytest.mark.shared
def test_cli_rejects_zero_jobs(starpu_data, capsys):
    folder = str(starpu_data / "sampling")
    code = main(["simulate", "cholesky", "--sizes", "9600,14400", "--starpu-dir", folder, "--starpu-machine", "attila", "--jobs", "0"])
    assert code == 2
    assert "--jobs" in capsys.readouterr().err


def test_default_job_count_starts_a_cluster_only_for_big_sweeps(monkeypatch):
    import nodecast.workflows.simulate_sweep as sweep

    calls = []
    monkeypatch.setattr(sweep, "default_jobs", lambda: 4)
    monkeypatch.setattr(sweep, "run_case", lambda case, p, m, g=None: {"tasks": case.n_tasks()})
    monkeypatch.setattr(sweep, "_run_on_dask", lambda cases, p, m, g, jobs, address, progress: calls.append(jobs) or [{}] * len(cases))
    small = [Case(RuntimeOptions(), "cholesky", n, 960) for n in (9600, 19200, 28800)]  # 6,720 tasks
    assert [r["tasks"] for r in sweep.run_cases(small, None, None)] == [220, 1540, 4960]
    assert calls == []
    big = [Case(RuntimeOptions(), "cholesky", n, 960) for n in (57600, 72000)]  # 110,000+ tasks
    sweep.run_cases(big, None, None)
    assert calls == [2]  # never more workers than cases
    sweep.run_cases(small, None, None, jobs=3)
    assert calls == [2, 3]  # an explicit job count is honoured


@pytest.mark.shared
def test_existing_scheduler_address_is_used_and_left_running(attila, starpu_data):
    import logging

    from distributed import Client, LocalCluster

    cases = _cases()[:3]
    serial = run_cases(cases, attila, _models(starpu_data), jobs=1)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None, silence_logs=logging.ERROR) as cluster:
        remote = run_cases(cases, attila, _models(starpu_data), address=cluster.scheduler_address)
        assert _strip_wall(remote) == _strip_wall(serial)
        with Client(cluster.scheduler_address) as client:  # still there for its owner
            assert len(client.scheduler_info()["workers"]) == 1


def test_unreachable_scheduler_is_one_clear_error():
    with pytest.raises(InputError, match="--cluster: cannot reach a Dask scheduler at 'nonsense'"):
        run_cases([Case(RuntimeOptions(), "cholesky", 9600, 960)], None, None, address="nonsense")


@pytest.mark.shared
def test_cli_dag_swept_over_schedulers(starpu_data, tmp_path, capsys):
    from nodecast.graph.apps import cholesky
    from nodecast.graph.taskgraph import to_json

    dag = tmp_path / "chol.json"
    dag.write_text(json.dumps(to_json(cholesky(9600, 960))))
    folder = str(starpu_data / "sampling")
    args = ["simulate", "--dag", str(dag), "--scheduler", "dmda,eager", "--starpu-dir", folder, "--starpu-machine", "attila"]
    assert main([*args, "--jobs", "1", "--json", str(tmp_path / "one.json")]) == 0
    table = capsys.readouterr().out
    assert "-         dmda       220" in table and "-         eager      220" in table
    assert main([*args, "--jobs", "2", "--json", str(tmp_path / "two.json")]) == 0
    assert (tmp_path / "two.json").read_bytes() == (tmp_path / "one.json").read_bytes()


@pytest.mark.shared
def test_run_sweep_rows_follow_sizes_then_schedulers_and_lead_with_the_best(attila, starpu_data):
    """run_sweep gives one row per size and scheduler in that order, GFlop/s rounded as the files hold it; the
    headline is the fastest run's GFlop/s (as flop/s) and makespan, naming its size and scheduler."""
    from nodecast.workflows.simulate_sweep import run_sweep

    res = run_sweep(RuntimeOptions(), attila, _models(starpu_data), app="cholesky", sizes=[1920, 3840],
                    schedulers=["dmda", "eager"])
    assert [(r["matrix_size"], r["scheduler"]) for r in res.rows] == [(1920, "dmda"), (1920, "eager"),
                                                                      (3840, "dmda"), (3840, "eager")]
    alone = run_case(Case(RuntimeOptions(scheduler="eager"), "cholesky", 3840, 960), attila, _models(starpu_data))
    assert res.rows[3]["makespan_s"] == alone["makespan_s"] and res.rows[3]["gflops"] == round(alone["gflops"], 3)
    best = max(res.rows, key=lambda r: r["gflops"])
    perf, span = res.headline()
    assert (perf.value, perf.unit, span.value, span.unit) == (best["gflops"] * 1e9, "flop/s", best["makespan_s"], "s")
    assert f"cholesky {best['matrix_size']}, {best['scheduler']}" in perf.note
    assert list(res.table().columns) == ["app", "matrix_size", "scheduler", "tasks", "makespan_s", "gflops", "evictions", "purges"]
    assert res.title == "cholesky (single, block 960) on attila, workers=gpus"
