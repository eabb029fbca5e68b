"""Table 1 of Van Lanker et al. (Euro-Par 2024) in the catalogue: measured GPU maxima on the paper's own machines."""

from __future__ import annotations

import pytest

from nodecast.machines import catalogue_names, load_machine
from nodecast.machines.loader import catalogue_dir
from nodecast.models.roofline_figures import PAPER_TABLE1, gpu_figures

ORIGIN = "Van Lanker et al., Euro-Par 2024, Table 1"

#: Table 1 as printed in the paper (papers/roofline-kernel-projection.txt, section 5.1):
#: Perf^Max (GFLOP/s), BW_DRAM^Max, BW_L2^Max, BW_L1^Max (GB/s).
PAPER = {
    "V100": (6890, 846, 2460, 13963),
    "A100-40": (9476, 1375, 4710, 19492),
    "A100-80": (9476, 1678, 4710, 19492),
    "H100": (24979, 1907, 7758, 25330),
}
#: Table 1's CPU, CPU RAM (GiB) and CUDA driver rows.
HOSTS = {
    "V100": ("Xeon Gold 6226R", 16, 512, "530.30.02"),
    "A100-40": ("Rome", 64, 256, "510.85.02"),
    "A100-80": ("Xeon Gold 6226R", 16, 512, "530.30.02"),
    "H100": ("Milan", 64, 512, "530.30.02"),
}
#: The catalogue machine modelled on each column's host, one per column. The V100 and A100-40 columns are not Summit
#: (POWER9) or DGX A100 (EPYC 7742, 1 TB): they have machines of their own, the V100 on the A100-80's Xeon host.
MACHINES = {
    "V100": "v100-pcie-server",
    "A100-40": "a100-40-rome-server",
    "A100-80": "a100-80-pcie-server",
    "H100": "h100-pcie-server",
}
#: Each column's data-sheet DRAM peak (GB/s, DATASHEETS.md D.1), Table 1's DRAM maximum's share of it, and the
#: host link's PCIe generation (the host CPU's: Cascade Lake 3.0, Rome and Milan 4.0) and width.
DRAM_AND_LINK = {
    "V100": (900, 0.94, 3, 16),      # V100 PCIe: 900 GB/s, Gen3 x16 card
    "A100-40": (1555, 0.88, 4, 16),  # A100 40 GB (SXM4 or PCIe): 1,555 GB/s, Gen4 x16
    "A100-80": (1935, 0.87, 3, 16),  # A100 80GB PCIe: 1,935 GB/s, Gen4 card on a Gen3 host
    "H100": (2039, 0.935, 4, 16),    # H100 PCIe: 2,039 GB/s (driver; NVIDIA: "> 2,000"), Gen5 card on a Gen4 host
}
#: FP64 FMA lanes per SM (the FP64 vector peak is SMs x lanes x 2 x boost clock): 32 on GV100 and GA100, 64 on H100
#: (the derivations in the machine files: 80 x 32 x 2 x 1.38 GHz, 108 x 32 x 2 x 1.41 GHz, 114 x 64 x 2 x 1.755 GHz).
FP64_FMA_PER_SM = {"V100": 32, "A100-40": 32, "A100-80": 32, "H100": 64}


@pytest.mark.parametrize("column", sorted(MACHINES))
def test_machine_carries_its_table1_column(column):
    """The machine's [measured] block holds its Table 1 column exactly, ADD/MUL at half the FMA figure."""
    perf, dram, l2, l1 = PAPER[column]
    m = load_machine(MACHINES[column]).measured
    assert m is not None
    assert m.origin == ORIGIN
    assert m.gpu_origin.startswith(ORIGIN)
    assert m.gpu_name == column
    assert m.gpu_peak_flops["fp64"].fma == perf * 1e9
    assert m.gpu_peak_flops["fp64"].addmul == perf * 1e9 / 2
    assert set(m.gpu_peak_flops) == {"fp64"}
    assert m.gpu_level_bandwidth_bps == {"dram": dram * 1e9, "l2": l2 * 1e9, "l1": l1 * 1e9}


@pytest.mark.parametrize("column", sorted(MACHINES))
def test_roofline_reports_the_measured_origin(column):
    """gpu_figures takes FP64 and the DRAM/L2/L1 bandwidths from Table 1, and the rest from the data sheet."""
    perf, dram, l2, l1 = PAPER[column]
    fig = gpu_figures(load_machine(MACHINES[column]))
    assert fig.fma["fp64"] == perf * 1e9
    assert fig.addmul["fp64"] == perf * 1e9 / 2
    assert (fig.bandwidth["dram"], fig.bandwidth["l2"], fig.bandwidth["l1"]) == (dram * 1e9, l2 * 1e9, l1 * 1e9)
    for key in ("fma.fp64", "addmul.fp64", "bw.dram", "bw.l2", "bw.l1"):
        assert fig.origin[key].startswith(f"measured, {ORIGIN}"), key
    assert fig.bandwidth["shared"] == l1 * 1e9
    assert fig.origin["fma.fp32"] == "data sheet"


def test_measured_figures_win_over_the_reference_ratio():
    """A Table 1 target keeps its own figures, while a data-sheet target is scaled by the Table 1 source's ratio."""
    a100 = load_machine("a100-80-pcie-server")
    fig = gpu_figures(load_machine("h100-pcie-server"), reference=a100)
    assert fig.bandwidth["dram"] == 1907e9
    assert fig.origin["bw.dram"].startswith(f"measured, {ORIGIN}")
    assert fig.origin["fma.fp32"] == "data sheet"  # the source has no measured FP32 to form a ratio with
    sxm = gpu_figures(load_machine("h100-sxm5-server"), reference=a100)
    assert sxm.bandwidth["dram"] == pytest.approx(3.35e12 * 1678 / 1935)  # paper's Peak/Max rule (section 4.1)
    assert "a100-80-pcie-server measured/peak 0.867" in sxm.origin["bw.dram"]


@pytest.mark.parametrize("column", sorted(MACHINES))
def test_machine_is_the_papers_host(column):
    """Each machine's CPU, sockets, cores, RAM and driver are Table 1's for its column."""
    cpu_name, cores, ram_gib, driver = HOSTS[column]
    m = load_machine(MACHINES[column])
    assert cpu_name in m.cpu.model
    assert (m.cpu.sockets, m.cpu.cores_per_socket) == (2, cores)
    assert m.cpu.memory_bytes == ram_gib * 2**30
    assert m.measured.driver == driver


def test_gpus_are_pcie_cards_on_their_hosts_pcie_generation():
    """The V100, A100-80 and H100 are the PCIe variants; the A100-40's form factor is left open (not stated)."""
    for column in ("V100", "A100-80", "H100"):
        assert "PCIe" in load_machine(MACHINES[column]).gpu.model, column
    a100_40 = load_machine(MACHINES["A100-40"]).gpu.model
    assert "PCIe" not in a100_40 and "SXM" not in a100_40


@pytest.mark.parametrize("column", sorted(MACHINES))
def test_dram_peak_and_host_link(column):
    """Each GPU sits below its data-sheet DRAM peak by Table 1's ratio, on its host CPU's PCIe generation x16."""
    peak_gbs, share, gen, lanes = DRAM_AND_LINK[column]
    m = load_machine(MACHINES[column])
    assert m.gpu.dram_bandwidth_bps == peak_gbs * 1e9
    assert PAPER[column][1] / peak_gbs == pytest.approx(share, abs=0.01)
    assert (m.host_link(0).kind, m.host_link(0).gen, m.host_link(0).lanes) == ("pcie", gen, lanes)


@pytest.mark.parametrize("column", sorted(MACHINES))
def test_fp64_maximum_is_97_percent_of_the_vector_peak(column):
    """Table 1's FP64 maximum is 97.2-97.5 % of SMs x FP64 lanes x 2 x boost clock on every machine as modelled."""
    gpu = load_machine(MACHINES[column]).gpu
    peak = gpu.sms * FP64_FMA_PER_SM[column] * 2 * gpu.clock_hz
    assert PAPER[column][0] * 1e9 / peak == pytest.approx(0.974, abs=0.003)


def test_v100_is_the_pcie_card_not_the_sxm2():
    """6890 GFLOP/s is 97.5 % of the V100 PCIe's 7.07 TFLOP/s (1380 MHz) but 88 % of the SXM2's 7.83 (1530 MHz)."""
    v100 = load_machine("v100-pcie-server")
    sxm2 = load_machine("summit").gpu
    assert (v100.gpu.sms, v100.gpu.clock_hz, sxm2.sms, sxm2.clock_hz) == (80, 1380e6, 80, 1530e6)
    assert 6890e9 / (80 * 32 * 2 * 1380e6) == pytest.approx(0.975, abs=0.001)
    assert 6890e9 / (80 * 32 * 2 * 1530e6) == pytest.approx(0.88, abs=0.001)
    assert v100.gpu.peak_flops["fp64"].fma == 7.0e12 and v100.gpu.peak_flops["fp32"].fma == 14.0e12
    assert v100.gpu.memory_bytes == 16e9 and v100.gpu.levels["l2"].size_bytes == 6 * 2**20


def test_v100_as_the_papers_source_gpu():
    """Projecting from the V100 (the paper's source, section 5) scales a data-sheet target by the V100's ratios."""
    v100 = load_machine("v100-pcie-server")
    fig = gpu_figures(load_machine("summit"), reference=v100)  # SXM2 target: 900 GB/s, 7.8 TFLOP/s data sheet
    assert fig.bandwidth["dram"] == pytest.approx(900e9 * 846 / 900)
    assert fig.fma["fp64"] == pytest.approx(7.8e12 * 6890 / 7000)
    assert "v100-pcie-server measured/peak 0.940" in fig.origin["bw.dram"]
    own = gpu_figures(load_machine("a100-40-rome-server"), reference=v100)  # a Table 1 target keeps its own figures
    assert own.bandwidth["dram"] == 1375e9 and own.fma["fp64"] == 9476e9


def test_a100_40_host_is_rome_not_the_dgx():
    """The A100-40 host is Table 1's 2x 64c Rome @ 2.6 GHz with 256 GiB, with the older toolkit, on PCIe 4.0."""
    m = load_machine("a100-40-rome-server")
    assert m.cpu.clock_hz == 2.6e9 and m.cpu.memory_bytes == 256 * 2**30
    assert m.measured.facts["nvcc"] == "V11.6.55" and m.measured.facts["compute_capability"] == "8.0"
    assert (m.gpu.sms, m.gpu.clock_hz, m.gpu.memory_bytes) == (108, 1410e6, 40e9)
    dgx = load_machine("dgx-a100")
    assert dgx.cpu.clock_hz != m.cpu.clock_hz and dgx.cpu.memory_bytes != m.cpu.memory_bytes


def test_every_table1_machine_matches_its_papers_host():
    """Any catalogue machine that claims a Table 1 column has that column's host CPU and RAM."""
    claimed = set()
    for name in catalogue_names():
        m = load_machine(name)
        if m.measured is None or m.measured.origin != ORIGIN:
            continue
        cpu_name, cores, ram_gib, _ = HOSTS[m.measured.gpu_name]
        assert cpu_name in m.cpu.model and m.cpu.cores_per_socket == cores, name
        assert m.cpu.memory_bytes == ram_gib * 2**30, name
        claimed.add(m.measured.gpu_name)
    assert claimed == set(MACHINES) == set(PAPER)  # all four Table 1 columns have a machine


@pytest.mark.parametrize("name", ["summit", "dgx-a100", "h100-sxm5-server"])
def test_other_hosts_keep_data_sheet_figures(name):
    """Summit, DGX A100 and the SXM5 server are not Table 1's hosts, so the roofline uses their data sheets."""
    fig = gpu_figures(load_machine(name))
    assert fig.origin["fma.fp64"] == "data sheet"
    assert fig.origin["bw.dram"] == "data sheet"


def test_roofline_table1_constant_matches_the_paper():
    """The model's PAPER_TABLE1 constant holds Table 1's four columns as printed."""
    for column, (perf, dram, l2, l1) in PAPER.items():
        assert PAPER_TABLE1[column] == {"perf_max_flops": perf * 1e9, "dram_bps": dram * 1e9,
                                        "l2_bps": l2 * 1e9, "l1_bps": l1 * 1e9}


@pytest.mark.parametrize("name", sorted(MACHINES.values()))
def test_new_files_follow_the_catalogue_standard(name):
    """The new files load, list ADD/MUL at half of FMA and put a source comment on every value line."""
    m = load_machine(name)
    assert m.name == name
    for peak in m.gpu.peak_flops.values():
        assert peak.addmul == pytest.approx(peak.fma / 2)
    structural = {"id", "kind", "endpoints", "schema_version", "name", "description", "switches", "count",
                  "cpu_socket", "size_bytes", "gen", "lanes", "links", "mps_bytes", "mrrs_bytes", "rcb_bytes",
                  "header_bytes"}
    text = (catalogue_dir() / f"{name}.toml").read_text()
    uncommented = [s for s in (line.strip() for line in text.splitlines())
                   if s and not s.startswith(("#", "[")) and s.split("=", 1)[0].strip() not in structural
                   and "#" not in s]
    assert not uncommented, uncommented
