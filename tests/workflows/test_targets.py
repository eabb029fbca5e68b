"""Tests for nodecast.workflows.targets: several targets and machine-parameter sweeps, one comparison."""

from __future__ import annotations

import pytest

from nodecast.errors import InputError
from nodecast.workflows.forecast import read_trace_and_api
from nodecast.workflows.targets import (
    TargetSpec,
    apply_params,
    compare_targets,
    parse_sweep,
    split_targets,
    target_specs,
    with_gpu_count,
)
from nodecast.machines import load_machine
from nodecast.engine.platform import Platform

VECTORADD = "nsys_vectoradd-streams_t4.sqlite"


def test_sweep_is_the_cartesian_product():
    """Two keys of 3 and 2 values give 6 nodes, in key order, the last key varying fastest."""
    combos = parse_sweep(["link.gen=3,4,5", "link.lanes=8,16"])
    assert len(combos) == 6
    assert combos[0] == (("link.gen", 3.0), ("link.lanes", 8.0))
    assert combos[1] == (("link.gen", 3.0), ("link.lanes", 16.0))
    assert parse_sweep([]) == [()]


@pytest.mark.parametrize("text", ["link.speed=3", "link.gen", "link.gen=3.5", "gpu.count=0", "gpu.dram_gbps=x",
                                  "link.gen=", "gpu.dram_gbps=inf"])
def test_bad_sweeps_are_one_line_errors(text):
    """Unknown keys, missing values, fractions of integer keys and non-positive numbers are refused."""
    with pytest.raises(InputError) as err:
        parse_sweep([text])
    assert "--sweep" in str(err.value)


def test_a_key_given_twice_is_refused():
    """Two --sweep options for one key are refused (their values belong in one list)."""
    with pytest.raises(InputError, match="twice"):
        parse_sweep(["link.gen=3", "link.gen=4"])


def test_targets_times_sweeps_and_labels():
    """Every --to machine is swept; labels carry the parameters."""
    specs = target_specs(["titan", "summit"], ["gpu.dram_gbps=100,200"])
    assert [s.label for s in specs] == ["titan[gpu.dram_gbps=100]", "titan[gpu.dram_gbps=200]",
                                        "summit[gpu.dram_gbps=100]", "summit[gpu.dram_gbps=200]"]
    assert split_targets("a, b,a") == ["a", "b"]
    with pytest.raises(InputError):
        split_targets("a,,b")


def test_link_generation_changes_the_host_link():
    """link.gen=4 on the Titan node (PCIe gen2) makes its GPU's host link gen4 and says so."""
    m = apply_params(load_machine("titan"), [("link.gen", 4)])
    assert m.host_link(0).gen == 4
    assert m.name == "titan[link.gen=4]"
    assert any("link.gen = 4" in n for n in m.notes)


def test_link_generation_on_a_c2c_node_is_refused():
    """GH200's GPU reaches its CPU over NVLink-C2C: no PCIe or NVLink generation to sweep."""
    with pytest.raises(InputError, match="nvlink-c2c"):
        apply_params(load_machine("gh200"), [("link.gen", 4)])


def test_unknown_generation_is_refused():
    """PCIe generation 7 does not exist in the link tables: one line naming the key."""
    with pytest.raises(InputError, match="link.gen"):
        apply_params(load_machine("titan"), [("link.gen", 7)])


def test_dram_and_host_memory_bandwidth():
    """gpu.dram_gbps and cpu.mem_gbps set the GPU's DRAM and the host's memory bandwidth, in GB/s."""
    m = apply_params(load_machine("summit"), [("gpu.dram_gbps", 1234), ("cpu.mem_gbps", 56)])
    assert m.gpu.dram_bandwidth_bps == 1234e9
    assert m.cpu.memory_bandwidth_bps == 56e9


def test_gpu_count_up_and_down():
    """More GPUs copy the last GPU's host links (the simulator platform then has them); fewer drop them."""
    m = load_machine("titan")
    four = with_gpu_count(m, 4)
    assert four.gpu.count == 4 and len(four.gpu.cpu_socket) == 4
    assert four.host_link(3).gen == m.host_link(0).gen
    assert Platform.from_machine(four).node_names == ["RAM", "CUDA0", "CUDA1", "CUDA2", "CUDA3"]
    dgx = load_machine("dgx-a100")
    two = with_gpu_count(dgx, 2)
    assert two.gpu.count == 2
    assert all(not ({f"gpu{i}" for i in range(2, 8)} & set(lk.endpoints)) for lk in two.links)
    Platform.from_machine(two)


@pytest.fixture(scope="module")
def vectoradd(shared_dir):
    return read_trace_and_api(shared_dir / VECTORADD)


def test_faster_links_forecast_faster_and_rows_keep_their_order(vectoradd):
    """On the copy-heavy vector add, PCIe gen3 -> gen4 -> gen5 lowers the copies and the end to end."""
    trace, api = vectoradd
    specs = target_specs(["h100-pcie-server"], ["link.gen=3,4,5"])
    comp = compare_targets(trace, api, specs, jobs=1)
    table = comp.table()
    assert table["target"].tolist() == [s.label for s in specs]
    assert table["copies_s"].is_monotonic_decreasing and table["end_to_end_s"].is_monotonic_decreasing
    path = table["path_gpu_s"] + table["path_host_s"] + table["path_other_s"]
    assert path.to_numpy() == pytest.approx(table["end_to_end_s"].to_numpy())
    assert comp.measured_end_to_end_s > 0
    assert any("--from omitted" in n for n in comp.common_notes())


def test_a_bad_target_fails_before_any_forecast(vectoradd):
    """One unknown machine among the targets is an InputError before anything runs."""
    trace, api = vectoradd
    calls = []
    with pytest.raises(InputError, match="no-such-node"):
        compare_targets(trace, api, [TargetSpec("titan"), TargetSpec("no-such-node")], progress=calls.append)
    assert calls == []


def test_dask_gives_the_same_rows(vectoradd):
    """Two targets on a local Dask cluster of two workers give the rows one process gives."""
    trace, api = vectoradd
    specs = [TargetSpec("titan"), TargetSpec("summit")]
    here = compare_targets(trace, api, specs, jobs=1).table()
    there = compare_targets(trace, api, specs, jobs=2).table()
    assert there["target"].tolist() == here["target"].tolist()
    numeric = here.columns.drop("target")
    assert there[numeric].to_numpy(float) == pytest.approx(here[numeric].to_numpy(float), rel=1e-12)


def test_unreachable_cluster_is_one_line(vectoradd):
    """--cluster naming no Dask scheduler is an InputError naming the option."""
    trace, api = vectoradd
    with pytest.raises(InputError, match="--cluster"):
        compare_targets(trace, api, [TargetSpec("titan"), TargetSpec("summit")], address="nonsense")
