"""The AHEAD model (eqs. 9-10) per transfer class, against hand-worked times and AHEAD's own traces."""

from __future__ import annotations

import sqlite3
from importlib import resources

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodecast.machines import load_machine
from nodecast.machines.loader import machine_from_dict
from nodecast.machines.topology import raw_rate_bps
from nodecast.models.base import Model
from nodecast.models.registry import get_models
from nodecast.models.transfer import AheadEq9Model, AheadModel, AheadNoLatencyModel
from nodecast.traces import CopyKind, MemKind, OpKind, Trace, TransferClass

TC = TransferClass
MIB = 1048576
TITAN = load_machine("titan")
ONE_BYTE = {"htod_pinned": 1e-6, "htod_pageable": 1e-6, "dtoh_pinned": 1e-6, "dtoh_pageable": 1e-6,
            "dtod": 2e-6, "peer": 3e-6, "htod_managed": 4e-6, "dtoh_managed": 4e-6}

#: (copy kind, source memory, destination memory) per class.
KINDS = {
    TC.HTOD_PINNED: (CopyKind.HTOD, MemKind.PINNED, MemKind.DEVICE),
    TC.HTOD_PAGEABLE: (CopyKind.HTOD, MemKind.PAGEABLE, MemKind.DEVICE),
    TC.DTOH_PINNED: (CopyKind.DTOH, MemKind.DEVICE, MemKind.PINNED),
    TC.DTOH_PAGEABLE: (CopyKind.DTOH, MemKind.DEVICE, MemKind.PAGEABLE),
    TC.DTOD: (CopyKind.DTOD, MemKind.DEVICE, MemKind.DEVICE),
    TC.PEER: (CopyKind.PEER, MemKind.DEVICE, MemKind.DEVICE),
    TC.HTOD_MANAGED: (CopyKind.UVM_HTOD, MemKind.MANAGED, MemKind.MANAGED),
    TC.DTOH_MANAGED: (CopyKind.UVM_DTOH, MemKind.MANAGED, MemKind.MANAGED),
    TC.DTOD_MANAGED: (CopyKind.UVM_DTOD, MemKind.MANAGED, MemKind.MANAGED),
    TC.HTOH: (CopyKind.HTOH, MemKind.PAGEABLE, MemKind.PAGEABLE),
}


def ops(klass: TransferClass, sizes, device=0, src_device=None, dst_device=None) -> Trace:
    """A trace of copies of one class, sizes in bytes, 1 µs apart."""
    sizes = np.atleast_1d(np.asarray(sizes, dtype=np.int64))
    n = sizes.size
    ck, sm, dm = KINDS[klass]
    start = np.arange(n, dtype=np.int64) * 1000
    cols = {"kind": np.full(n, OpKind.MEMCPY), "copy_kind": np.full(n, ck), "src_mem": np.full(n, sm),
            "dst_mem": np.full(n, dm), "bytes": sizes, "start_ns": start, "end_ns": start + 500,
            "device": np.full(n, device)}
    if src_device is not None:
        cols["src_device"] = np.full(n, src_device)
        cols["dst_device"] = np.full(n, dst_device)
    return Trace.from_columns(cols)


def titan_measured():
    """Titan with measured 1-byte costs in its file (round values for hand arithmetic)."""
    import tomllib

    data = tomllib.loads(TITAN.path.read_text())
    data["measured"] = {"origin": "test", "one_byte_s": ONE_BYTE}
    return machine_from_dict(data, "titan-test.toml")


def summit_like(one_byte: dict[str, float] | None = ONE_BYTE):
    """Two POWER9-like sockets with two V100-like GPUs each: NVLink 2.0 x2 to the CPU and within a pair, X-Bus 32 GB/s."""
    nv = {"kind": "nvlink", "gen": 2, "links": 2}
    data = {
        "schema_version": 1, "name": "summit-like", "description": "Summit-like test machine",
        "cpu": {"model": "POWER9", "sockets": 2, "cores_per_socket": 22, "clock_hz": 3.07e9,
                "memory_bytes": 512e9, "memory_bandwidth_bps": 170e9},
        "gpu": {"model": "V100", "count": 4, "sms": 80, "clock_hz": 1.53e9, "memory_bytes": 16e9,
                "cpu_socket": [0, 0, 1, 1], "levels": {"dram": {"bandwidth_bps": 900e9}}},
        "links": [
            {"id": "nv-c0-g0", "endpoints": ["cpu0", "gpu0"], **nv},
            {"id": "nv-c0-g1", "endpoints": ["cpu0", "gpu1"], **nv},
            {"id": "nv-g0-g1", "endpoints": ["gpu0", "gpu1"], **nv},
            {"id": "nv-c1-g2", "endpoints": ["cpu1", "gpu2"], **nv},
            {"id": "nv-c1-g3", "endpoints": ["cpu1", "gpu3"], **nv},
            {"id": "nv-g2-g3", "endpoints": ["gpu2", "gpu3"], **nv},
            {"id": "xbus", "kind": "socket-bus", "endpoints": ["cpu0", "cpu1"], "bandwidth_bps": 32e9},
        ],
    }
    if one_byte is not None:
        data["measured"] = {"origin": "test", "one_byte_s": one_byte}
    return machine_from_dict(data, "summit-like.toml")


def project(klass, sizes, target, source=None, model=None, **kw) -> np.ndarray:
    return (model or AheadModel()).project(ops(klass, sizes, **kw), source or target, target).time_s


# -- hand-worked values -------------------------------------------------------------------------------

def test_titan_htod_pinned_one_mib():
    """Eq. 10 over Titan's PCIe gen2 x16 with framing: 1 µs + 1376788 B / 8 GB/s = 173.0985 µs."""
    # n_hat = (12+8) + 512 + 16384*(12+8) + 1048576 = 1376788 B; 1376788 / 8e9 = 172.0985 µs; + L+O 1 µs
    t = project(TC.HTOD_PINNED, MIB, titan_measured())
    assert t[0] == pytest.approx(173.0985e-6, rel=1e-12)


def test_titan_htod_pinned_paper_verbatim():
    """With the paper's TL-header-only eq. 4 (and MRRS verbatim): 1 µs + 1245708 / 8e9 = 156.7135 µs."""
    # n_hat = 12 + 512 + 16384*12 + 1048576 = 1245708 B -> 155.7135 µs, + 1 µs
    model = AheadModel(pcie_framing=False, pcie_first_request="mrrs")
    assert project(TC.HTOD_PINNED, MIB, titan_measured(), model=model)[0] == pytest.approx(156.7135e-6, rel=1e-12)


def test_titan_htod_pageable_eq9_adds_staging():
    """ahead-eq9 (eq. 9): the pinned time plus 2n / MemBW = 2 * 1048576 / 51.2e9 = 40.96 µs -> 214.0585 µs."""
    t = project(TC.HTOD_PAGEABLE, MIB, titan_measured(), model=AheadEq9Model())
    assert t[0] == pytest.approx(173.0985e-6 + 40.96e-6, rel=1e-12)


def test_titan_pageable_one_chunk_costs_its_dma():
    """ahead: a 1-MiB pageable copy fits one staging chunk, staged before its DMA: the pinned time, 173.0985 µs."""
    assert project(TC.HTOD_PAGEABLE, MIB, titan_measured())[0] == pytest.approx(173.0985e-6, rel=1e-12)


def test_titan_htod_pageable_four_mib_host_bound():
    """ahead, HtoD 4 MiB at H = 3.83 GB/s: 1 µs + 3 C/H + W(C) = 1 + 821.3389 + 172.0985 µs (host-bound)."""
    h = 3.83e9
    expected = 1e-6 + 3 * MIB / h + 172.0985e-6
    assert project(TC.HTOD_PAGEABLE, 4 * MIB, titan_measured())[0] == pytest.approx(expected, rel=1e-12)


def test_titan_dtoh_pageable_four_mib_host_bound():
    """ahead, DtoH 4 MiB: the first DMA, two chunks drained on the host, the last DMA: 1 + 151.552 + 2 C/H + 151.552 µs."""
    expected = 1e-6 + 151.552e-6 + 2 * MIB / 3.83e9 + 151.552e-6
    assert project(TC.DTOH_PAGEABLE, 4 * MIB, titan_measured())[0] == pytest.approx(expected, rel=1e-12)


def test_titan_dtoh_pinned_one_mib():
    """Eq. 5 with MPS 128: 1 µs + (8192*20 + 1048576) / 8e9 = 1 + 151.552 = 152.552 µs."""
    assert project(TC.DTOH_PINNED, MIB, titan_measured())[0] == pytest.approx(152.552e-6, rel=1e-12)


def test_titan_dtod_reads_and_writes():
    """D2D: its own L+O (2 µs) + 2n / DRAM = 2 + 2*1048576/250e9 = 2 + 8.388608 = 10.388608 µs."""
    assert project(TC.DTOD, MIB, titan_measured())[0] == pytest.approx(10.388608e-6, rel=1e-12)


def test_dtod_paper_literal_form(monkeypatch):
    """With dtod_dram_passes = 1 (the paper's sentence) D2D is 2 + 4.194304 µs."""
    monkeypatch.setattr(AheadModel, "dtod_dram_passes", 1)
    assert project(TC.DTOD, MIB, titan_measured())[0] == pytest.approx(6.194304e-6, rel=1e-12)


def test_summit_htod_pinned_over_nvlink():
    """Eq. 10 with NVLink eq. 6: 1 µs + 1114128 / 50e9 = 1 + 22.28256 = 23.28256 µs."""
    assert project(TC.HTOD_PINNED, MIB, summit_like())[0] == pytest.approx(23.28256e-6, rel=1e-12)


def test_summit_pageable_uses_cpu_memory_bandwidth():
    """Eq. 9 on the Summit-like node: + 2 * 1048576 / 170e9 = 12.336188 µs of staging."""
    t = project(TC.DTOH_PAGEABLE, MIB, summit_like())
    # 1 µs + 1114112/50e9 (22.28224 µs) + 12.336188 µs
    assert t[0] == pytest.approx(1e-6 + 22.28224e-6 + 2 * MIB / 170e9, rel=1e-12)


def test_peer_over_direct_nvlink():
    """gpu0 -> gpu1 peer copy over their NVLink pair, a write: 3 µs + 1114112 / 50e9 = 25.28224 µs."""
    t = project(TC.PEER, MIB, summit_like(), src_device=0, dst_device=1)
    assert t[0] == pytest.approx(25.28224e-6, rel=1e-12)


def test_peer_across_sockets_is_limited_by_xbus():
    """gpu0 -> gpu3 goes gpu0-cpu0-xbus-cpu1-gpu3; the slowest link, X-Bus at 32 GB/s raw, sets the time."""
    # 3 µs + 1048576 / 32e9 = 3 + 32.768 = 35.768 µs
    result = AheadModel().project(ops(TC.PEER, MIB, src_device=0, dst_device=3), summit_like(), summit_like())
    assert result.time_s[0] == pytest.approx(35.768e-6, rel=1e-12)
    assert any("route nv-c0-g0 -> xbus -> nv-c1-g3" in n for n in result.notes)


def test_peer_over_infinity_fabric_at_its_raw_rate():
    """gpu0 -> gpu1 on the MI300X platform goes over their one xGMI gen-4 link, taken at its raw 64 GB/s per
    direction (no packet model for xGMI): 3 µs + 1048576 / 64e9 = 3 + 16.384 = 19.384 µs."""
    mi300x = load_machine("mi300x-platform")
    model = AheadModel()
    model.one_byte_given_s = {"peer": 3e-6}
    result = model.project(ops(TC.PEER, MIB, src_device=0, dst_device=1), mi300x, mi300x)
    assert result.time_s[0] == pytest.approx(19.384e-6, rel=1e-12)


def test_managed_like_pinned_with_note():
    """UM migrations use the host link like pinned copies, with their own L+O, and say so."""
    # 4 µs + 1376788 / 8e9 = 176.0985 µs
    result = AheadModel().project(ops(TC.HTOD_MANAGED, MIB), titan_measured(), titan_measured())
    assert result.time_s[0] == pytest.approx(176.0985e-6, rel=1e-12)
    assert any(n.startswith("1 unified-memory migration projected") for n in result.notes)


def test_one_byte_note_names_target_file():
    """The notes say where L+O came from, with the value in µs."""
    result = AheadModel().project(ops(TC.HTOD_PINNED, MIB), TITAN, titan_measured())
    assert "1-byte cost (L+O) of htod_pinned from target machine file titan (measured): 1.000 µs" in result.notes


def test_htoh_and_other_not_handled():
    """HtoH and unclassified copies are NaN and not accepted; kernels too."""
    trace = Trace.concat([ops(TC.HTOH, [64]), ops(TC.HTOD_PINNED, [64])])
    other = Trace.from_columns({"kind": [OpKind.MEMCPY, OpKind.KERNEL], "copy_kind": [CopyKind.UNKNOWN, CopyKind.NONE],
                                "start_ns": [0, 0], "end_ns": [1, 1]})
    model = AheadModel()
    assert model.accepts(trace).tolist() == [False, True]
    t = model.project(trace, TITAN, titan_measured()).time_s
    assert np.isnan(t[0]) and np.isfinite(t[1])
    r = model.project(other, TITAN, titan_measured())
    assert np.isnan(r.time_s).all()


def test_devices_beyond_target_wrap_with_note():
    """A trace from a 4-GPU node projected on Titan (1 GPU): device 3 maps to gpu0, with a note."""
    result = AheadModel().project(ops(TC.HTOD_PINNED, MIB, device=3), titan_measured(), titan_measured())
    assert result.time_s[0] == pytest.approx(173.0985e-6, rel=1e-12)
    assert any("mod 1" in n for n in result.notes)


def test_device_picks_its_host_link():
    """On a multi-socket target each GPU uses its own host link (gpu2 -> cpu1)."""
    result = AheadModel().project(ops(TC.HTOD_PINNED, MIB, device=2), summit_like(), summit_like())
    assert any(n.startswith("gpu2 host link on summit-like: nv-c1-g2") for n in result.notes)


def test_no_latency_variant_drops_one_byte_cost():
    """ahead-no-latency = ahead minus L+O."""
    target = titan_measured()
    trace = ops(TC.HTOD_PINNED, [1, 4096, MIB])
    with_lo = AheadModel().project(trace, target, target).time_s
    without = AheadNoLatencyModel().project(trace, target, target).time_s
    np.testing.assert_allclose(with_lo - without, 1e-6, rtol=1e-9)


def test_registry_has_ahead_models():
    """ahead and ahead-no-latency are registered transfer models, not baselines."""
    models = {m.name: m for m in get_models(kind="transfer")}
    for name in ("ahead", "ahead-no-latency"):
        assert isinstance(models[name], Model)
        assert models[name].baseline is False and models[name].kind == "transfer"


def test_vectorized_over_a_mixed_trace():
    """A trace mixing every class is projected in one call, each op by its own equation."""
    classes = [TC.HTOD_PINNED, TC.DTOH_PAGEABLE, TC.DTOD, TC.HTOD_MANAGED]
    trace = Trace.concat([ops(c, MIB) for c in classes])
    t = AheadModel().project(trace, summit_like(), summit_like()).time_s
    singles = [project(c, MIB, summit_like())[0] for c in classes]
    np.testing.assert_allclose(t, singles, rtol=1e-12)


# -- AHEAD's own ground truth: Titan -> Summit bandwidthTest (shipped samples) --------------------------

def bandwidth_test(stem: str) -> Trace:
    """AHEAD's bandwidthTest nvprof database (host->device sweep 1 B - 256 MiB) as a Trace."""
    db = resources.files("nodecast") / "data" / "samples" / f"{stem}.nvvp"
    with resources.as_file(db) as path:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = np.array(con.execute(
            "SELECT bytes, start, end, srcKind FROM CUPTI_ACTIVITY_KIND_MEMCPY ORDER BY start").fetchall())
        con.close()
    n = len(rows)
    return Trace.from_columns({
        "kind": np.full(n, OpKind.MEMCPY), "copy_kind": np.full(n, CopyKind.HTOD), "src_mem": rows[:, 3],
        "dst_mem": np.full(n, MemKind.DEVICE), "bytes": rows[:, 0], "start_ns": rows[:, 1], "end_ns": rows[:, 2],
    })


@pytest.mark.parametrize("mode", ["pinned", "pageable"])
def test_titan_to_summit_beats_baselines(mode):
    """Projecting AHEAD's Titan trace onto a Summit node: ahead's weighted error beats both baselines."""
    titan = bandwidth_test(f"nvprof_ahead-bandwidthtest-htod-{mode}_titan-k20x")
    summit = bandwidth_test(f"nvprof_ahead-bandwidthtest-htod-{mode}_summit-v100")
    assert (titan["bytes"] == summit["bytes"]).all()
    actual = summit.duration_ns * 1e-9
    target = summit_like(one_byte=None)
    err = {}
    for model in get_models(kind="transfer"):
        projected = model.project(titan, TITAN, target).time_s
        err[model.name] = np.abs(actual - projected).sum() / actual.sum()
    assert err["ahead"] < err["peak-bandwidth"] < err["back-of-envelope"] + 1e-12
    if mode == "pinned":
        # NVLink eq. 6 with Titan's 0.96 µs L+O: 0.5 % weighted error over the sweep (Summit 256 MiB: 47.0 GB/s)
        assert err["ahead"] < 0.02


# -- properties ---------------------------------------------------------------------------------------

HANDLED = [TC.HTOD_PINNED, TC.HTOD_PAGEABLE, TC.DTOH_PINNED, TC.DTOH_PAGEABLE, TC.DTOD, TC.PEER,
           TC.HTOD_MANAGED, TC.DTOH_MANAGED, TC.DTOD_MANAGED]


def gh200_like():
    data = {
        "schema_version": 1, "name": "gh200-like", "description": "GH200-like",
        "cpu": {"model": "Grace", "sockets": 1, "cores_per_socket": 72, "clock_hz": 3.1e9, "memory_bytes": 480e9,
                "memory_bandwidth_bps": 546e9},
        "gpu": {"model": "H100", "count": 1, "sms": 132, "clock_hz": 1.98e9, "memory_bytes": 96e9,
                "levels": {"dram": {"bandwidth_bps": 4e12}}},
        "links": [{"id": "c2c", "kind": "nvlink-c2c", "endpoints": ["cpu0", "gpu0"], "bandwidth_bps": 450e9}],
    }
    return machine_from_dict(data, "gh200-like.toml")


TARGETS = {"pcie": titan_measured(), "nvlink": summit_like(), "c2c": gh200_like()}


def floor_rate(klass: TransferClass, target, src: int, dst: int) -> float:
    """The raw rate no projection may beat: DRAM for D2D, else the slowest link of the copy's route."""
    if klass == TC.DTOD or (klass in (TC.PEER, TC.DTOD_MANAGED) and src == dst):
        return target.gpu.dram_bandwidth_bps
    if klass in (TC.PEER, TC.DTOD_MANAGED):
        return min(raw_rate_bps(lk) for lk in target.route(f"gpu{src}", f"gpu{dst}"))
    return raw_rate_bps(target.host_link(0))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(HANDLED), st.sampled_from(sorted(TARGETS)), st.integers(0, 2**36),
       st.sampled_from(["ahead", "ahead-no-latency", "peak-bandwidth", "back-of-envelope"]))
def test_time_strictly_grows_and_never_beats_raw_rate(klass, kind, n, name):
    """For every class, link kind and model: T(n+1) > T(n), and T(n) >= n / raw rate."""
    target = TARGETS[kind]
    src, dst = (0, target.gpu.count - 1) if klass in (TC.PEER, TC.DTOD_MANAGED) else (None, None)
    model = get_models([name])[0]
    trace = ops(klass, [n, n + 1], src_device=src, dst_device=dst)
    t = model.project(trace, target, target).time_s
    assert t[1] > t[0]
    rate = floor_rate(klass, target, src or 0, dst or 0)
    assert t[0] >= n / rate * (1 - 1e-12)
    if n > 0:
        assert n / t[0] <= rate * (1 + 1e-12)  # effective bandwidth never exceeds the raw rate


def test_one_byte_cost_follows_the_source_machine_values():
    """A source machine of the same name and file with other measured 1-byte costs gets its own L+O, not the last one."""
    from dataclasses import replace

    from nodecast.machines.schema import Measured

    trace = ops(TC.HTOD_PINNED, [1, 1, 1, MIB])
    target = load_machine("summit")
    AheadModel().project(trace, TITAN, target)  # L+O from the trace's tiny copies (0.5 µs)
    measured = replace(TITAN, measured=replace(TITAN.measured or Measured(origin="test"),
                                               one_byte_s={"htod_pinned": 5e-6}))
    with_lo = AheadModel().project(trace, measured, target).time_s
    without = AheadNoLatencyModel().project(trace, measured, target).time_s
    np.testing.assert_allclose(with_lo - without, 5e-6, rtol=1e-9)
