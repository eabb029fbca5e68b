"""The node a trace ran on: picked from its GPU name when --from is omitted, checked when it is given."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodecast.errors import InputError
from nodecast.machines.resolve import check_gpu, resolve_source, same_gpu, trace_gpu_names
from nodecast.traces.trace import TraceMeta


def meta(*names: str, source: str = "run.nsys-rep") -> TraceMeta:
    """Trace metadata as a reader fills it: device index -> GPU name."""
    return TraceMeta(source=source, gpus=dict(enumerate(names)))


def test_trace_gpu_names_reads_meta_mapping_and_lists():
    """GPU names come from a Trace's meta, a TraceMeta, a mapping or a list; blank names are dropped."""
    assert trace_gpu_names(meta("A", "B")) == {0: "A", 1: "B"}
    assert trace_gpu_names({3: "A", 4: " "}) == {3: "A"}
    assert trace_gpu_names(["A"]) == {0: "A"} and trace_gpu_names(None) == {}


def test_omitted_from_composes_from_the_trace_gpu(sheet_folder):
    """Without --from, the trace's GPU name picks the sheet; one GPU per device; the notes say how."""
    m = resolve_source(meta("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"), None)
    assert m.gpu.sheet.key == "h100-sxm5-80gb" and m.gpu.count == 2
    assert m.notes[0].startswith("--from omitted: the trace's GPU 'NVIDIA H100 80GB HBM3' is data sheet "
                                 "h100-sxm5-80gb")
    assert any(n.startswith("host assumed") for n in m.notes)


@pytest.mark.parametrize(("names", "reason"), [
    ((), "the trace records no GPU name"),
    (("NVIDIA GeForce RTX 3090",), "no GPU data sheet matches the trace's GPU 'NVIDIA GeForce RTX 3090'"),
])
def test_omitted_from_without_a_usable_name(sheet_folder, names, reason):
    """No name, or a name no sheet has, is one line naming the trace and asking for --from."""
    with pytest.raises(InputError) as info:
        resolve_source(meta(*names), None)
    msg = info.value.message
    assert reason in msg and msg.startswith("run.nsys-rep: --from:") and "Give --from MACHINE" in msg


def test_two_gpu_models_need_from(sheet_folder, h100, add_sheet):
    """A trace of two GPU models cannot pick one node: the error lists both."""
    add_sheet(h100(key="other", device_names='["Other GPU"]').replace("sms = 132", "sms = 100"))
    with pytest.raises(InputError) as info:
        resolve_source(meta("NVIDIA H100 80GB HBM3", "Other GPU"), None)
    assert "GPUs of 2 models: 'NVIDIA H100 80GB HBM3' (h100-sxm5-80gb), 'Other GPU' (other)" in info.value.message


def test_mismatch_is_an_error_naming_both(sheet_folder, h100, add_sheet):
    """A --from node with another GPU than the trace's is refused, naming both and the override."""
    add_sheet(h100(key="rtx", device_names='["NVIDIA GeForce RTX 3090"]').replace("sms = 132", "sms = 82"))
    with pytest.raises(InputError) as info:
        resolve_source(meta("NVIDIA GeForce RTX 3090"), "h100-sxm5-80gb")
    msg = info.value.message
    assert "the trace ran on 'NVIDIA GeForce RTX 3090' (data sheet rtx), not on --from" in msg
    assert "(data sheet h100-sxm5-80gb)" in msg and "--allow-gpu-mismatch" in msg and "\n" not in msg


def test_mismatch_allowed_becomes_a_note(sheet_folder, h100, add_sheet):
    """With allow_mismatch the node is used as given and the notes say the GPUs differ."""
    add_sheet(h100(key="rtx", device_names='["NVIDIA GeForce RTX 3090"]').replace("sms = 132", "sms = 82"))
    m = resolve_source(meta("NVIDIA GeForce RTX 3090"), "h100-sxm5-80gb", allow_mismatch=True)
    assert m.gpu.sheet.key == "h100-sxm5-80gb"
    assert any(n.startswith("GPU mismatch allowed: the trace ran on 'NVIDIA GeForce RTX 3090'") for n in m.notes)


def test_matching_gpu_passes_silently(sheet_folder):
    """The trace's own GPU on --from adds no check note."""
    m = resolve_source(meta("NVIDIA H100 80GB HBM3"), "h100-sxm5-80gbx8")
    assert not any("mismatch" in n or "not checked" in n for n in m.notes)


def test_same_gpu_other_memory_is_a_note(sheet_folder, h100, add_sheet):
    """Sheets that differ only in memory size count as the same GPU, with a note."""
    add_sheet(h100(key="h100-big", device_names='["NVIDIA H100 96GB"]').replace("memory_bytes = 80e9",
                                                                                 "memory_bytes = 96e9"))
    m = resolve_source(meta("NVIDIA H100 96GB"), "h100-sxm5-80gb")
    assert any("treated as the same GPU" in n for n in m.notes)
    from nodecast.machines.sheets import load_sheet

    assert same_gpu(load_sheet("h100-big"), load_sheet("h100-sxm5-80gb"))


def test_unknown_gpu_cannot_be_checked(sheet_folder):
    """A trace GPU that no sheet describes is a note, not an error, when --from is given."""
    m = resolve_source(meta("Some Future GPU"), "h100-sxm5-80gb")
    assert any("'Some Future GPU' has no data sheet" in n for n in m.notes)
    assert check_gpu(m, {}) == ["the trace records no GPU name: --from h100-sxm5-80gb@xeon-platinum-8480c-2s "
                                "not checked against it"]


def test_machine_without_sheet_is_checked_by_model_name(sheet_folder, tmp_path):
    """A machine file without a sheet is matched through its GPU model name."""
    from nodecast.machines import load_machine_file

    text = """schema_version = 1
name = "hand"
description = "hand-written"
[cpu]
model = "c"
sockets = 1
cores_per_socket = 1
clock_hz = 1e9
memory_bytes = 1e9
memory_bandwidth_bps = 1e10
[gpu]
model = "NVIDIA H100 80GB HBM3"
count = 1
sms = 132
clock_hz = 1.98e9
memory_bytes = 80e9
[gpu.levels.dram]
bandwidth_bps = 3.35e12
[[links]]
id = "p"
kind = "pcie"
endpoints = ["cpu0", "gpu0"]
gen = 5
lanes = 16
"""
    (tmp_path / "hand.toml").write_text(text)
    m = load_machine_file(tmp_path / "hand.toml")
    assert check_gpu(m, {0: "NVIDIA H100 80GB HBM3"}) == []
    renamed = replace(m, gpu=replace(m.gpu, model="My GPU"))
    assert "has no data sheet" in check_gpu(renamed, {0: "NVIDIA H100 80GB HBM3"})[0]


def test_only_gpus_with_ops_pick_the_model(sheet_folder):
    """Readers list every GPU of the node; the model is picked from those the trace has ops on."""
    import numpy as np

    from nodecast.traces.kinds import OpKind
    from nodecast.traces.trace import Trace

    tr = Trace.from_columns({"kind": np.array([OpKind.KERNEL] * 2), "start_ns": np.array([0, 10]),
                             "end_ns": np.array([5, 15]), "device": np.array([1, 2])},
                            meta=meta("Display GPU", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"))
    m = resolve_source(tr, None)
    assert m.gpu.sheet.key == "h100-sxm5-80gb" and m.gpu.count == 2
    assert check_gpu(m, {0: "Display GPU"})[0].startswith("the trace's GPU 'Display GPU' has no data sheet")


@pytest.mark.parametrize(("devices", "count", "said"), [
    ([0, 0], 1, "ops ran on GPU 0 only"), ([3], 4, "the node holds GPUs 0-3"), (list(range(7)), 7, None)])
def test_listed_but_idle_gpus_do_not_grow_the_node(sheet_folder, devices, count, said):
    """A reader lists all 7 GPUs of the node (nsys on a 7-GPU box); the node is as large as the GPUs that ran need."""
    import numpy as np

    from nodecast.traces.kinds import OpKind
    from nodecast.traces.trace import Trace

    n = len(devices)
    tr = Trace.from_columns({"kind": np.array([OpKind.KERNEL] * n), "start_ns": np.arange(n) * 10,
                             "end_ns": np.arange(n) * 10 + 5, "device": np.array(devices)},
                            meta=meta(*["NVIDIA H100 80GB HBM3"] * 7))
    m = resolve_source(tr, None)
    assert m.gpu.count == count
    if said is None:
        assert "the trace lists" not in m.notes[0]
    else:
        assert said in m.notes[0] and "the trace lists 7 such GPUs" in m.notes[0]


def test_multi_gpu_trace_says_what_it_assumed_of_the_links(shared_traces):
    """The 8-GPU Kineto trace of an A100 SXM4 80GB node (issue 21): the composed node says it assumed no links
    between the GPUs and names the catalogue node to give with --from; given, that node is accepted."""
    from nodecast.traces.load import load_trace

    tr = load_trace(shared_traces / "kineto_training-rank0_a100-80gb.json.gz")
    composed = resolve_source(tr, None)
    said = [str(n) for n in composed.notes if "links between" in str(n)]
    assert len(said) == 1, composed.notes
    assert "8 such GPUs" in said[0] and "none assumed" in said[0] and "route through the host" in said[0]
    assert "--from dgx-a100-80gb" in said[0]
    named = resolve_source(tr, "dgx-a100-80gb")
    assert named.gpu.count == 8 and named.gpu.sheet.key == "a100-sxm4-80gb"
    assert [link.kind for link in named.route("gpu0", "gpu5")] == ["nvlink", "nvlink"]
    assert not any("links between" in str(n) for n in named.notes)


def test_composed_multi_gpu_node_names_the_catalogue_nodes_of_its_gpu():
    """Ops on 8 H100 SXM5: the note on the (absent) GPU-to-GPU links replaces the generic one and names the
    catalogue's 8-GPU H100 SXM5 node; a single-GPU trace gets no such note."""
    import numpy as np

    from nodecast.traces.kinds import OpKind
    from nodecast.traces.trace import Trace

    tr = Trace.from_columns({"kind": np.array([OpKind.KERNEL] * 8), "start_ns": np.arange(8) * 10,
                             "end_ns": np.arange(8) * 10 + 5, "device": np.arange(8)},
                            meta=meta(*["NVIDIA H100 80GB HBM3"] * 8))
    m = resolve_source(tr, None)
    assert m.gpu.count == 8
    said = [str(n) for n in m.notes if "links between" in str(n)]
    assert len(said) == 1 and "--from h100-sxm5-server" in said[0]
    assert not any(str(n).startswith("composed node: no GPU-to-GPU links") for n in m.notes)
    one = resolve_source(meta("NVIDIA H100 80GB HBM3"), None)
    assert not any("links between" in str(n) for n in one.notes)
