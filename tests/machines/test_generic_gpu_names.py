"""A GPU the driver names generically ("Graphics Device") is told by what the trace records of it, never by name.

NVIDIA drivers name boards they do not know "Graphics Device" (pre-release and
unlisted boards): the name says nothing of the product, so no sheet may match
it. A trace that records the device's compute capability, SM count and memory
(CUPTI's device record in nvprof files) picks the one sheet that has them, and
the notes say so; anything else is one line asking for --from.
"""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from nodecast.errors import InputError
from nodecast.machines.device_properties import GpuProperties
from nodecast.machines.names import is_generic_gpu_name, match_sheet
from nodecast.machines.resolve import check_gpu, resolve_source
from nodecast.machines.sheets import load_sheet_file
from nodecast.traces.trace import TraceMeta

#: The CUPTI device record of the shared GTX TITAN X trace: CC 5.2, 24 SMs, 12,800,163,840 bytes.
TITAN_X = GpuProperties(target="sm_52", sms=24, memory_bytes=12_800_163_840)


def generic(props: GpuProperties | None = TITAN_X, name: str = "Graphics Device") -> TraceMeta:
    """A trace's metadata with one generically named GPU and, when given, its recorded properties."""
    return TraceMeta(source="run.nvvp", gpus={0: name}, gpu_properties={0: props} if props else {})


@pytest.mark.parametrize("name", ["Graphics Device", "NVIDIA Graphics Device", "graphics device", "device 0"])
def test_generic_names_are_recognised_and_match_no_sheet(name):
    """The driver's generic names (and the reader's "device N" placeholder) match no sheet, whatever sheets say."""
    assert is_generic_gpu_name(name) and match_sheet(name) is None
    assert not is_generic_gpu_name("GeForce GTX TITAN X")


def test_a_sheet_may_not_list_a_generic_name(sheet_folder, h100):
    """A sheet that lists "Graphics Device" is refused: it would claim every unknown board."""
    path = sheet_folder / "h100-sxm5-80gb.toml"
    path.write_text(h100(device_names='["NVIDIA H100 80GB HBM3", "Graphics Device"]'))
    with pytest.raises(InputError) as info:
        load_sheet_file(path)
    assert info.value.key == "device_names" and "generic" in info.value.message


def test_generic_name_with_recorded_properties_picks_the_one_matching_sheet():
    """CC 5.2, 24 SMs and 12.8 GB are the GTX TITAN X's alone: --from omitted picks it and the note says why."""
    m = resolve_source(generic(), None)
    assert m.gpu.sheet.key == "gtx-titan-x" and m.gpu.count == 1
    note = m.notes[0]
    assert note.startswith("--from omitted: the trace's GPU 'Graphics Device' is data sheet gtx-titan-x")
    assert "generic name" in note and "compute capability 5.2, 24 SMs" in note and "\n" not in note


def test_generic_name_without_properties_asks_for_from():
    """Nothing else recorded: one line naming the trace, saying why, and asking for --from."""
    with pytest.raises(InputError) as info:
        resolve_source(generic(None), None)
    msg = info.value.message
    assert msg.startswith("run.nvvp: --from:") and "'Graphics Device'" in msg and "generic" in msg
    assert "--from" in info.value.hint and "\n" not in msg


def test_generic_name_whose_properties_fit_several_sheets_lists_them():
    """CC 7.0, 80 SMs and 16 GB fit both 16 GB V100s: the error names both and asks for --from."""
    props = GpuProperties(target="sm_70", sms=80, memory_bytes=16_945_512_448)
    with pytest.raises(InputError) as info:
        resolve_source(generic(props), None)
    assert "v100-pcie-16gb" in info.value.message and "v100-sxm2-16gb" in info.value.message


def test_generic_name_is_checked_against_from_by_its_properties():
    """With --from, a generic name is compared by its properties: the TITAN X passes, a T4 is a mismatch."""
    m = resolve_source(generic(), "gtx-titan-x")
    assert check_gpu(m, {0: "Graphics Device"}, properties={0: TITAN_X}) == []
    assert not any("not checked" in str(n) for n in m.notes)
    with pytest.raises(InputError) as info:
        resolve_source(generic(), "t4")
    assert "gtx-titan-x" in info.value.message


def test_real_titan_x_trace_with_a_generic_name(shared_traces, tmp_path):
    """The shared nvprof trace of a GTX TITAN X, its device renamed "Graphics Device" as drivers name unknown boards:
    the reader keeps CUPTI's device record and --from omitted resolves the GPU from it."""
    from nodecast.traces.load import load_trace

    original = load_trace(shared_traces / "nvprof_tensorflow-cnn_gtx-titan-x.nvvp")
    assert original.meta.gpu_properties[0] == TITAN_X
    copy = tmp_path / "graphics-device.nvvp"
    shutil.copyfile(shared_traces / "nvprof_tensorflow-cnn_gtx-titan-x.nvvp", copy)
    copy.chmod(0o644)
    with sqlite3.connect(copy) as db:
        (name_id,) = db.execute("SELECT name FROM CUPTI_ACTIVITY_KIND_DEVICE").fetchone()
        db.execute("UPDATE StringTable SET value = 'Graphics Device' WHERE _id_ = ?", (name_id,))
    trace = load_trace(copy)
    assert trace.meta.gpus == {0: "Graphics Device"}
    m = resolve_source(trace, None)
    assert m.gpu.sheet.key == "gtx-titan-x" and "generic name" in m.notes[0]
    with sqlite3.connect(copy) as db:  # a record without the properties (CUPTI writes 0 for what it does not know)
        db.execute("UPDATE CUPTI_ACTIVITY_KIND_DEVICE SET computeCapabilityMajor = 0, computeCapabilityMinor = 0, "
                   "numMultiprocessors = 0, globalMemorySize = 0")
    with pytest.raises(InputError) as info:
        resolve_source(load_trace(copy), None)
    assert str(copy) in info.value.message and "records nothing else" in info.value.message
