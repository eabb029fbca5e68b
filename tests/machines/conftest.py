"""GPU data sheets and targets built in the tests from the documented format (src/nodecast/machines/gpus/README.md).

``sheet_folder`` writes them to a temporary folder and points the catalogue
(``nodecast.machines.sheets.gpus_dir``) at it, so tests of loading, name
matching and composition do not depend on the shipped sheets, which other
tests check on their own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

#: The README's example sheet (H100 SXM5), values as there.
H100 = """\
schema_version = 1
key = "{key}"
name = "NVIDIA H100 SXM5 80GB"
vendor = "nvidia"
architecture = "Hopper"
chip = "GH100"
target = "sm_90"
release_year = 2022
device_names = {device_names}
sms = 132
base_clock_hz = 1.59e9
boost_clock_hz = 1.98e9
memory_type = "HBM3"
memory_bytes = 80e9
memory_bus_bits = 5120
dram_bandwidth_bps = 3.35e12
l2_bytes = 50e6
l2_bandwidth_bps = 10.1376e12     # [derived: 5,120 B/clk x 1.98e9 Hz]
l1_bandwidth_bps = 33.45408e12    # [derived: 128 B/clk per SM x 132 SMs x 1.98e9 Hz]
tdp_w = 700
copy_engines = 3
max_concurrent_kernels = 128

[host_link]
kind = "{link_kind}"
gen = {link_gen}
lanes = 16

[peak_flops]
fp64 = 33.5e12   # vector FMA peak
fp32 = 66.9e12   # [derived: 132 SMs x 128 FP32 FMA/clk x 2 x 1.98e9 Hz]
fp16 = 133.8e12
bf16 = 133.8e12
fp64_tensor = 66.9e12
tf32_tensor = 494.7e12
fp16_tensor = 989.4e12
bf16_tensor = 989.4e12
fp8_tensor = 1978.9e12
int8_tensor = 1978.9e12
"""

#: The README's example target file (compute capability 9.0).
SM90 = """\
schema_version = 1
target = "sm_90"
vendor = "nvidia"
warp_size = 32                              # threads per warp
max_threads_per_block = 1024
max_threads_per_sm = 2048
max_warps_per_sm = 64
max_blocks_per_sm = 32
registers_per_sm = 65536
max_registers_per_thread = 255
max_registers_per_block = 65536
register_allocation_unit = 256
shared_memory_per_sm_bytes = 233472
max_shared_memory_per_block_bytes = 232448
shared_memory_allocation_unit_bytes = 128
reserved_shared_memory_per_block_bytes = 1024
fp32_lanes_per_sm = 128
fp64_lanes_per_sm = 64
"""


def h100_text(key: str = "h100-sxm5-80gb", device_names: str = '["NVIDIA H100 80GB HBM3"]',
              link_kind: str = "pcie", link_gen: int = 5) -> str:
    """The example sheet with a chosen key, device names and host link."""
    return H100.format(key=key, device_names=device_names, link_kind=link_kind, link_gen=link_gen)


def write_sheet(folder: Path, text: str, name: str | None = None) -> Path:
    """Write ``text`` as ``folder/<name or its key>.toml``."""
    if name is None:
        name = next(line.split('"')[1] for line in text.splitlines() if line.startswith("key = "))
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


@pytest.fixture
def sheet_folder(tmp_path, monkeypatch):
    """A catalogue folder (``tmp_path/gpus``) holding the H100 example sheet and sm_90 target; the shipped catalogue is hidden."""
    from nodecast.machines import sheets

    folder = tmp_path / "gpus"
    (folder / "targets").mkdir(parents=True)
    (folder / "targets" / "sm_90.toml").write_text(SM90)
    write_sheet(folder, h100_text())
    monkeypatch.setattr(sheets, "gpus_dir", lambda: folder)
    return folder


@pytest.fixture
def h100():
    """``h100(key=..., device_names=..., link_kind=..., link_gen=...)`` -> the example sheet's text."""
    return h100_text


@pytest.fixture
def add_sheet(sheet_folder):
    """``add_sheet(text, name=None)`` writes a sheet into ``sheet_folder`` and returns its path."""
    return lambda text, name=None: write_sheet(sheet_folder, text, name)
