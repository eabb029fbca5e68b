"""``SimResult``: the summary's fields, the tables and schedule the reports draw, the headline, on a real calibration."""

from __future__ import annotations

import pytest

from nodecast.graph.apps import cholesky
from nodecast.models.history import KernelModels
from nodecast.engine.platform import Platform
from nodecast.runtime.simulation import RuntimeOptions, Simulation

pytestmark = pytest.mark.shared  # needs ../shared/data/starpu

#: the JSON summary's fields (the --json file): a field added to SimResult must not change it
SUMMARY_FIELDS = ["app", "events", "evictions", "gflops", "links", "makespan_s", "n_tasks", "nodes", "notes", "options",
                  "platform", "purges", "scheduler", "total_flops", "transfers", "workers", "write_backs"]


def _run(starpu_data, trace=True):
    plat = Platform.from_starpu(starpu_data / "sampling" / "bus" / "attila.platform.v4.xml")
    models = KernelModels(starpu_data / "sampling" / "codelets" / "45", "attila")
    return Simulation(cholesky(3840, 960), plat, models, RuntimeOptions(trace=trace)).run()


def test_summary_keeps_its_fields_and_inputs_say_where_the_platform_came_from(starpu_data):
    """summary() (the JSON file) has the same fields as before results carried their inputs; inputs name the files."""
    res = _run(starpu_data, trace=False)
    assert sorted(res.summary()) == SUMMARY_FIELDS
    assert res.inputs["platform_source"].endswith("attila.platform.v4.xml")
    assert res.inputs["kernel_models"].endswith("codelets/45/*.attila")
    assert res.inputs["cpus"] == 12 and len(res.inputs["link_latency_s"]) == len(res.links)


def test_tables_add_up_to_the_run(starpu_data):
    """Workers' tasks add up to the run's; busy + idle is the makespan; links come most bytes first; copies per
    direction add up to the transfers; the headline is makespan (s) and GFlop/s as flop/s."""
    res = _run(starpu_data)
    w = res.workers_table()
    assert w["tasks"].sum() == res.n_tasks == 20
    assert (w["busy_s"] + w["idle_s"]).tolist() == pytest.approx([res.makespan_s] * len(w))
    assert w["busy"].tolist() == pytest.approx((w["busy_s"] / res.makespan_s).tolist())
    links = res.links_table()
    assert links["bytes"].is_monotonic_decreasing and (links["bytes"] > 0).all()
    assert res.transfers_table()["bytes"].sum() == pytest.approx(sum(v["bytes"] for v in res.transfers.values()))
    assert list(res.memory_table()["name"]) == ["CUDA0", "CUDA1", "CUDA2"]
    span, perf = res.headline()
    assert (span.value, span.unit, perf.value, perf.unit) == (res.makespan_s, "s", res.gflops * 1e9, "flop/s")


def test_schedule_has_workers_first_then_copy_directions(starpu_data):
    """The schedule holds every task and copy; its tracks are the workers in order, then the copy directions."""
    res = _run(starpu_data)
    ops = res.schedule()
    assert len(ops) == len(res.trace["tasks"]) + len(res.trace["transfers"])
    tracks = list(ops["track"].cat.categories)
    assert tracks[:3] == ["CUDA0", "CUDA1", "CUDA2"] and all("->" in t for t in tracks[3:])
    assert (ops["kind"] == "transfer").sum() == len(res.trace["transfers"])
    assert (ops["end_s"] >= ops["start_s"]).all()
    with pytest.raises(ValueError, match="no trace"):
        _run(starpu_data, trace=False).schedule()
