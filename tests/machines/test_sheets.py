"""GPU data sheets and target files: what loads, and one precise line for everything that does not."""

from __future__ import annotations

import pytest

from nodecast.errors import InputError
from nodecast.machines.sheets import (
    all_sheets,
    gpus_dir,
    load_sheet,
    load_sheet_file,
    load_target_file,
    sheet_keys,
    target_names,
)


def sheet_error(path) -> InputError:
    with pytest.raises(InputError) as info:
        load_sheet_file(path)
    return info.value


def test_example_sheet_loads_with_limits_and_sources(sheet_folder):
    """The README's example sheet loads with typed values, its target's limits and each value's source comment."""
    s = load_sheet("h100-sxm5-80gb")
    assert (s.sms, s.boost_clock_hz, s.memory_bytes, s.dram_bandwidth_bps) == (132, 1.98e9, 80e9, 3.35e12)
    assert s.peak("fp16_tensor") == 989.4e12 and s.peak("fp4_tensor") is None
    assert s.limits.max_threads_per_sm == 2048 and s.warp_size == 32
    assert s.host_link.label == "PCIe gen5 x16"
    assert s.sources["peak_flops.fp32"].startswith("[derived:")
    assert s.limits.sources["warp_size"] == "threads per warp"


@pytest.mark.parametrize(("old", "new", "key", "reason"), [
    ("boost_clock_hz = 1.98e9", "boost_clock_hz = 1980", "boost_clock_hz", "1980 Hz is implausible"),
    ("memory_bytes = 80e9", "memory_bytes = 80", "memory_bytes", "80 bytes is implausible"),
    ("dram_bandwidth_bps = 3.35e12", "dram_bandwidth_bps = -3.35e12", "dram_bandwidth_bps", "positive number"),
    ("sms = 132", "sms = 132.5", "sms", "positive integer"),
    ("sms = 132", "sms = 13200", "sms", "implausible"),
    ("fp32 = 66.9e12", "fp32 = nan", "peak_flops.fp32", "positive number"),
    ("fp8_tensor = 1978.9e12", "fp8_tensor = 1978.9e18", "peak_flops.fp8_tensor", "implausible"),
    ("fp8_tensor = 1978.9e12", "fp8_sparse = 3957.8e12", "peak_flops.fp8_sparse", "unknown key"),
    ("tdp_w = 700", "tdp_watts = 700", "tdp_watts", "unknown key"),
    ('vendor = "nvidia"', 'vendor = "intel"', "vendor", "must be one of nvidia, amd"),
    ("base_clock_hz = 1.59e9", "base_clock_hz = 2.5e9", "base_clock_hz", "above boost_clock_hz"),
    ('device_names = ["NVIDIA H100 80GB HBM3"]', "device_names = []", "device_names", "non-empty list"),
    ('target = "sm_90"', 'target = "sm_99"', "target", "'sm_99' has no limits file"),
    ("kind = \"pcie\"\ngen = 5", "kind = \"pcie\"\ngen = 7", "host_link.gen", "unknown PCIe generation 7"),
    ("lanes = 16", "lanes = 3", "host_link.lanes", "1, 2, 4, 8, 12, 16 or 32"),
    ("kind = \"pcie\"", "kind = \"ethernet\"", "host_link.kind", "must be one of"),
    ("release_year = 2022", "release_year = 22", "release_year", "implausible"),
    ("copy_engines = 3", "copy_engines = 0", "copy_engines", "positive integer"),
    ("copy_engines = 3", "copy_engines = 2.5", "copy_engines", "positive integer"),
    ("max_concurrent_kernels = 128", "max_concurrent_kernels = 100000", "max_concurrent_kernels", "implausible"),
    ("l2_bandwidth_bps = 10.1376e12", "l2_bandwidth_bps = 10.1376e3", "l2_bandwidth_bps", "implausible"),
    ("l2_bandwidth_bps = 10.1376e12", "l2_bandwidth_bps = 1e11", "l2_bandwidth_bps", "below dram_bandwidth_bps"),
    ("l1_bandwidth_bps = 33.45408e12", "l1_bandwidth_bps = 5e12", "l1_bandwidth_bps", "below l2_bandwidth_bps"),
    ("l1_bandwidth_bps = 33.45408e12", "l1_bandwidth = 33.45408e12", "l1_bandwidth", "unknown key"),
])
def test_bad_value_names_file_key_and_reason(sheet_folder, h100, old, new, key, reason):
    """Each bad value is one line naming the sheet file, the key path and the reason, with what to do."""
    text = h100()
    assert old in text
    path = sheet_folder / "h100-sxm5-80gb.toml"
    path.write_text(text.replace(old, new))
    err = sheet_error(path)
    assert err.key == key
    assert str(path) in err.message and reason in err.message
    assert "\n" not in err.message and err.hint


@pytest.mark.parametrize("missing", ["name", "vendor", "architecture", "target", "device_names", "sms",
                                     "boost_clock_hz", "memory_bytes", "dram_bandwidth_bps"])
def test_required_key_missing(sheet_folder, h100, missing):
    """A sheet without a required key names that key."""
    lines = [ln for ln in h100().splitlines() if not ln.startswith(f"{missing} =")]
    path = sheet_folder / "h100-sxm5-80gb.toml"
    path.write_text("\n".join(lines))
    assert sheet_error(path).key == missing


def test_fp32_peak_and_host_link_are_required(sheet_folder, h100):
    """A sheet needs peak_flops.fp32 and a [host_link] table."""
    path = sheet_folder / "h100-sxm5-80gb.toml"
    path.write_text(h100().replace("fp32 = 66.9e12", ""))
    assert sheet_error(path).key == "peak_flops.fp32"
    path.write_text(h100().replace("[host_link]", "[host_linx]"))
    assert sheet_error(path).key == "host_linx"


def test_key_must_equal_file_name(sheet_folder, h100):
    """A sheet whose key differs from its file name is refused, saying how to name the file."""
    path = sheet_folder / "h100.toml"
    path.write_text(h100())
    err = sheet_error(path)
    assert err.key == "key" and "must equal the file name 'h100'" in err.message


def test_target_vendor_must_match(sheet_folder, h100):
    """An AMD sheet pointing at an NVIDIA target is refused."""
    path = sheet_folder / "h100-sxm5-80gb.toml"
    path.write_text(h100().replace('vendor = "nvidia"', 'vendor = "amd"'))
    err = sheet_error(path)
    assert err.key == "target" and "nvidia target" in err.message


def test_unknown_sheet_key_suggests(sheet_folder):
    """An unknown key is one line with the close keys."""
    with pytest.raises(InputError) as info:
        load_sheet("h100-sxm5-80g")
    assert "unknown GPU data sheet 'h100-sxm5-80g'" in info.value.message
    assert "Did you mean h100-sxm5-80gb" in info.value.message


def test_not_toml_and_empty(sheet_folder):
    """Broken TOML and an empty file each give one line naming the file."""
    path = sheet_folder / "broken.toml"
    path.write_text("key = = 1")
    assert "not valid TOML" in sheet_error(path).message
    path.write_text("  \n")
    assert "is empty" in sheet_error(path).message


@pytest.mark.parametrize(("old", "new", "key", "reason"), [
    ("max_threads_per_sm = 2048", "max_threads_per_sm = 1536", "max_threads_per_sm",
     "must equal max_warps_per_sm x warp_size"),
    ("warp_size = 32", "warp_size = 48", "warp_size", "must be 32"),
    ("max_shared_memory_per_block_bytes = 232448", "max_shared_memory_per_block_bytes = 300000",
     "max_shared_memory_per_block_bytes", "cannot exceed shared_memory_per_sm_bytes"),
    ("max_registers_per_thread = 255", "max_registers_per_thread = 255.0", "max_registers_per_thread",
     "must be an integer"),
    ("registers_per_sm = 65536", "registers_per_sm = 65536000", "registers_per_sm", "implausible"),
    ("max_blocks_per_sm = 32", "", "max_blocks_per_sm", "missing value"),
    ('target = "sm_90"', 'target = "sm_9x"', "target", "must equal the file name"),
    ("fp64_lanes_per_sm = 64", "fp64_lanes = 64", "fp64_lanes", "unknown key"),
])
def test_bad_target(sheet_folder, old, new, key, reason):
    """Each bad target value is one line naming the target file, the key and the reason."""
    path = sheet_folder / "targets" / "sm_90.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    with pytest.raises(InputError) as info:
        load_target_file(path)
    assert info.value.key == key and reason in info.value.message and str(path) in info.value.message


def test_reserved_shared_memory_may_be_zero(sheet_folder):
    """Targets before compute capability 8.0 reserve no shared memory per block: 0 is valid."""
    path = sheet_folder / "targets" / "sm_90.toml"
    path.write_text(path.read_text().replace("reserved_shared_memory_per_block_bytes = 1024",
                                             "reserved_shared_memory_per_block_bytes = 0"))
    assert load_target_file(path).reserved_shared_memory_per_block_bytes == 0


# ---------------------------------------------------------------- the shipped catalogue


SHIPPED = sheet_keys()


def test_catalogue_is_not_empty_when_sheets_ship():
    """The shipped folder and its targets folder exist (sheets are added by the data-sheet work)."""
    assert gpus_dir().is_dir() and (gpus_dir() / "targets").is_dir()


@pytest.mark.parametrize("key", SHIPPED)
def test_every_shipped_sheet_loads(key):
    """Each shipped sheet passes every check, with its target's limits."""
    s = load_sheet(key)
    assert s.key == key and s.limits.target == s.target


@pytest.mark.parametrize("target", target_names())
def test_every_shipped_target_loads(target):
    """Each shipped target file passes every check."""
    assert load_target_file(gpus_dir() / "targets" / f"{target}.toml").target == target


def test_level_bandwidths_and_published_measurements_load(sheet_folder, h100):
    """The L2/L1 peaks load with their sources and reach a composed node's levels; a [measured] table loads as the
    product's published maxima; a measurement above its peak or an unknown key there is one line naming it."""
    from nodecast.machines import load_machine

    path = sheet_folder / "h100-sxm5-80gb.toml"
    s = load_sheet_file(path)
    assert (s.l2_bandwidth_bps, s.l1_bandwidth_bps, s.shared_bandwidth_bps) == (10.1376e12, 33.45408e12, None)
    assert s.sources["l2_bandwidth_bps"].startswith("[derived:") and not s.measured_level_bandwidth_bps
    levels = load_machine("h100-sxm5-80gb").gpu.levels
    assert (levels["l2"].bandwidth_bps, levels["l2"].size_bytes, levels["l1"].bandwidth_bps) == (10.1376e12, 50e6,
                                                                                               33.45408e12)
    path.write_text(h100() + "\n[measured]\nl2_bandwidth_bps = 7.0e12   # a benchmark\n")
    s = load_sheet_file(path)
    assert dict(s.measured_level_bandwidth_bps) == {"l2": 7.0e12} and s.sources["measured.l2_bandwidth_bps"]
    for bad, key, reason in (("l2_bandwidth_bps = 11e12", "measured.l2_bandwidth_bps", "above the sheet's peak"),
                             ("dram_bandwidth_bps = 3e12", "measured.dram_bandwidth_bps", "unknown key")):
        path.write_text(h100() + f"\n[measured]\n{bad}\n")
        err = sheet_error(path)
        assert err.key == key and reason in err.reason and str(path) in err.message


@pytest.mark.parametrize("key", SHIPPED)
def test_shipped_level_bandwidths_are_whole_widths(key):
    """A shipped sheet's derived level peaks are a whole number of bytes per clock: per SM/CU for L1 and shared
    memory (64, 128 or 256), per chip for L2 (a multiple of 512), at the sheet's boost clock."""
    s = load_sheet(key)
    per_sm = [v / (s.sms * s.boost_clock_hz) for v in (s.l1_bandwidth_bps, s.shared_bandwidth_bps) if v]
    assert all(round(w) in (64, 128, 256) and w == pytest.approx(round(w), rel=1e-9) for w in per_sm), per_sm
    if s.l2_bandwidth_bps:
        w = s.l2_bandwidth_bps / s.boost_clock_hz
        assert w == pytest.approx(round(w), rel=1e-9) and round(w) % 512 == 0, w
    assert s.l1_bandwidth_bps, "every shipped sheet gives its L1 peak"


@pytest.mark.parametrize("key", SHIPPED)
def test_every_shipped_sheet_value_has_a_source(key):
    """Every value of a shipped sheet carries its source in a comment (schema_version, key and vendor excepted)."""
    s = load_sheet(key)
    import tomllib

    data = tomllib.loads(s.path.read_text())
    given = [k for k, v in data.items() if not isinstance(v, dict)]
    given += [f"{t}.{k}" for t in ("host_link", "peak_flops", "measured") for k in data.get(t, {})]
    missing = [k for k in given if k not in ("schema_version", "key", "vendor") and k not in s.sources]
    assert not missing, f"{key}: values without a source comment: {missing}"


def test_shipped_device_names_are_distinct():
    """No two shipped sheets share a device name, even after normalisation: name matching never has to guess."""
    from nodecast.machines.names import normalise_gpu_name

    owner: dict[str, str] = {}
    clashes = []
    for s in all_sheets():
        for name in {normalise_gpu_name(n) for n in (*s.device_names, s.name, s.key)}:
            if owner.get(name, s.key) != s.key:
                clashes.append((name, owner[name], s.key))
            owner[name] = s.key
    assert not clashes


def test_warp_scheduler_counts_are_optional_bounded_integers(sheet_folder):
    """``warp_schedulers_per_sm`` and ``dispatch_units_per_scheduler`` load when given; 0 schedulers is one line
    naming the target file and the key."""
    path = sheet_folder / "targets" / "sm_90.toml"
    text = path.read_text()
    assert load_target_file(path).warp_schedulers_per_sm is None
    path.write_text(text + "warp_schedulers_per_sm = 4\ndispatch_units_per_scheduler = 1\n")
    limits = load_target_file(path)
    assert (limits.warp_schedulers_per_sm, limits.dispatch_units_per_scheduler) == (4, 1)
    path.write_text(text + "warp_schedulers_per_sm = 0\n")
    with pytest.raises(InputError) as info:
        load_target_file(path)
    assert info.value.key == "warp_schedulers_per_sm" and str(path) in info.value.message


@pytest.mark.parametrize("target", [t for t in target_names() if t.startswith("sm_")])
def test_shipped_nvidia_targets_give_scheduler_counts_with_sources(target):
    """Every shipped NVIDIA target gives its warp schedulers per SM (4; Fermi's sm_21 and GP100's sm_60: 2), each
    with a source comment, as the issue-limited compute rate needs (docs/kernels.md)."""
    limits = load_target_file(gpus_dir() / "targets" / f"{target}.toml")
    assert limits.warp_schedulers_per_sm == (2 if target in ("sm_21", "sm_60") else 4)
    assert "warp_schedulers_per_sm" in limits.sources
    if limits.dispatch_units_per_scheduler is not None:
        assert "dispatch_units_per_scheduler" in limits.sources


def test_fermi_issues_half_a_warp_per_scheduler_and_clock():
    """Fermi (sm_21): 2 warp schedulers, each issuing a warp instruction to 16 of the 48 lanes over two clocks, so
    single issue keeps 32 FP32 lanes busy per clock (dual issue is needed for the other 16), where the model once
    fell back to the clock ratio for want of a scheduler count."""
    from nodecast.models.kernel_ratios import issue_lanes, issue_slots

    limits = load_target_file(gpus_dir() / "targets" / "sm_21.toml")
    assert (limits.warp_schedulers_per_sm, limits.dispatch_units_per_scheduler) == (2, 2)
    assert limits.issue_clocks_per_warp_instruction == 2
    assert "issue_clocks_per_warp_instruction" in limits.sources
    assert (issue_slots(limits), issue_lanes(limits)) == (32, 32)
    kepler = load_target_file(gpus_dir() / "targets" / "sm_35.toml")
    assert kepler.issue_clocks_per_warp_instruction is None and issue_lanes(kepler) == 128


def test_issue_clocks_per_warp_instruction_is_a_bounded_integer(sheet_folder):
    """The optional issue time of one warp instruction loads when given; 0 is one line naming the file and key."""
    path = sheet_folder / "targets" / "sm_90.toml"
    text = path.read_text()
    path.write_text(text + "warp_schedulers_per_sm = 4\nissue_clocks_per_warp_instruction = 2\n")
    assert load_target_file(path).issue_clocks_per_warp_instruction == 2
    path.write_text(text + "issue_clocks_per_warp_instruction = 0\n")
    with pytest.raises(InputError) as info:
        load_target_file(path)
    assert info.value.key == "issue_clocks_per_warp_instruction" and str(path) in info.value.message
