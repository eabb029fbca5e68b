"""Device names as profilers write them find their data sheet: exactly, then normalised, never by a guess."""

from __future__ import annotations

import pytest

from nodecast.errors import InputError
from nodecast.machines.names import find_sheet, match_sheet, normalise_gpu_name
from nodecast.machines.sheets import all_sheets

#: GPU names recorded in the shared traces (Trace.meta.gpus) and the kernel zoo, as the trace readers report them.
REAL_NAMES = (
    "NVIDIA A100-PG509-200", "NVIDIA H100 80GB HBM3", "AMD Instinct MI300X VF", "NVIDIA A100-SXM4-80GB",
    "Tesla V100-SXM2-32GB", "Tesla T4", "NVIDIA GeForce RTX 3080", "NVIDIA GeForce RTX 3090", "NVIDIA A100-SXM4-40GB",
    "Tesla K40c", "Tesla K20X", "Tesla V100-SXM2-16GB", "TITAN V", "GeForce GTX TITAN X", "GeForce GTX 680",
    "GeForce GTX 970", "Tesla K20c", "GeForce GTX TITAN",
)


@pytest.mark.parametrize(("name", "normal"), [
    ("NVIDIA GeForce RTX 3090", "rtx3090"),
    ("GeForce RTX 3090", "rtx3090"),
    ("Tesla V100-SXM2-16GB", "v100sxm216gb"),
    ("NVIDIA Tesla V100 SXM2 16GB", "v100sxm216gb"),
    ("AMD Instinct MI300X VF", "instinctmi300x"),
    ("AMD Instinct MI300X", "instinctmi300x"),
    ("TITAN V", "titanv"),
    ("GeForce GTX TITAN X", "gtxtitanx"),
    ("NVIDIA A100-PG509-200", "a100pg509200"),
    ("", ""),
])
def test_normalise(name, normal):
    """Case, punctuation, the leading brand words and a trailing VF are ignored; nothing else is."""
    assert normalise_gpu_name(name) == normal


def test_exact_then_normalised(sheet_folder):
    """The driver's name matches exactly; other spellings of it match after normalisation; the key matches too."""
    exact = match_sheet("NVIDIA H100 80GB HBM3")
    assert exact.sheet.key == "h100-sxm5-80gb" and exact.how == "exact"
    loose = match_sheet("nvidia h100-80gb-hbm3")
    assert loose.sheet.key == "h100-sxm5-80gb" and loose.how == "normalised"
    assert match_sheet("H100 SXM5 80GB").how == "normalised"  # the product name
    assert "exact device name" in exact.describe("NVIDIA H100 80GB HBM3")


def test_no_guess_on_a_partial_name(sheet_folder):
    """A name that is only part of a sheet's names matches nothing: no prefix or edit-distance matching."""
    assert match_sheet("H100") is None
    assert match_sheet("NVIDIA H100 80GB") is None
    with pytest.raises(InputError) as info:
        find_sheet("H100")
    assert "no GPU data sheet for 'H100'" in info.value.message


def test_two_sheets_with_one_name_is_an_error(sheet_folder, h100, add_sheet):
    """When two sheets list the same name, matching refuses to choose and lists both keys."""
    add_sheet(h100(key="h100-copy"))
    with pytest.raises(InputError) as info:
        match_sheet("NVIDIA H100 80GB HBM3")
    msg = info.value.message
    assert "matches 2 data sheets by exact device name: h100-copy, h100-sxm5-80gb" in msg
    add_sheet(h100(key="h100-copy", device_names='["NVIDIA H100-80GB-HBM3"]'))
    with pytest.raises(InputError) as info:
        match_sheet("nvidia h100 80gb hbm3")
    assert "by normalised name" in info.value.message


def test_find_sheet_by_key_first(sheet_folder):
    """find_sheet takes a key as is, before any name matching."""
    assert find_sheet("h100-sxm5-80gb").key == "h100-sxm5-80gb"


@pytest.mark.parametrize("name", REAL_NAMES)
def test_real_trace_names_resolve(name):
    """Every GPU name in the shared traces and the kernel zoo resolves to exactly one shipped sheet."""
    hit = match_sheet(name, all_sheets())
    assert hit is not None, f"{name!r} matches no shipped data sheet"
