"""NVLink-C2C model: NVLink flit framing over the link's data-sheet bandwidth."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodecast.errors import InputError
from nodecast.machines.loader import machine_from_dict
from nodecast.models import c2c
from nodecast.models.transfer import AheadModel
from nodecast.traces import CopyKind, MemKind, OpKind, Trace

MIB = 1048576


def gh200_like(**measured) -> dict:
    """A one-superchip Grace Hopper node: C2C 450 GB/s per direction, LPDDR5X 546 GB/s, HBM3 4 TB/s."""
    data = {
        "schema_version": 1, "name": "gh200-test", "description": "GH200-like test machine",
        "cpu": {"model": "Grace", "sockets": 1, "cores_per_socket": 72, "clock_hz": 3.1e9, "memory_bytes": 480e9,
                "memory_bandwidth_bps": 546e9},
        "gpu": {"model": "H100 (GH200)", "count": 1, "sms": 132, "clock_hz": 1.98e9, "memory_bytes": 96e9,
                "levels": {"dram": {"bandwidth_bps": 4.0e12}}},
        "links": [{"id": "c2c", "kind": "nvlink-c2c", "endpoints": ["cpu0", "gpu0"], "bandwidth_bps": 450e9}],
    }
    if measured:
        data["measured"] = {"origin": "test", **measured}
    return data


def test_read_one_mib():
    """1 MiB host->device over C2C: NVLink eq. 6 over 450 GB/s."""
    # n_hat = 16 + 4096*16 + 1048576 = 1114128; BW_eff = 1048576 * 450e9 / 1114128 = 423.5233 GB/s
    link = machine_from_dict(gh200_like(), "test.toml").host_link(0)
    assert c2c.bytes_on_wire(MIB, "read") == 1114128
    assert c2c.effective_bandwidth_bps(MIB, link, "read") == pytest.approx(423.5233e9, rel=1e-6)


def test_write_one_mib():
    """1 MiB device->host over C2C: NVLink eq. 7."""
    # n_hat = 4096*16 + 1048576 = 1114112; time = 1114112 / 450e9 = 2.475804 µs
    link = machine_from_dict(gh200_like(), "test.toml").host_link(0)
    assert c2c.wire_time_s(MIB, link, "write") == pytest.approx(1114112 / 450e9)


def test_cache_line_payload_alternative(monkeypatch):
    """With 64-B packets (the documented alternative) large copies reach 64/80 = 80 % = 360 GB/s."""
    monkeypatch.setattr(c2c, "MAX_PAYLOAD_BYTES", 64)
    link = machine_from_dict(gh200_like(), "test.toml").host_link(0)
    assert c2c.effective_bandwidth_bps(2**30, link, "write") == pytest.approx(360e9, rel=1e-9)


def test_c2c_link_needs_bandwidth():
    """An nvlink-c2c link without bandwidth_bps is a machine-file error naming the key."""
    data = gh200_like()
    del data["links"][0]["bandwidth_bps"]
    with pytest.raises(InputError, match="bandwidth_bps"):
        machine_from_dict(data, "test.toml")


def test_ahead_projects_over_c2c():
    """AHEAD on a GH200-like target: (L+O) + n_hat / 450 GB/s for a pinned host->device copy."""
    # L+O = 2 µs (target file); n = 1 MiB: 2e-6 + 1114128 / 450e9 = 2e-6 + 2.4758400e-6 = 4.4758400 µs
    target = machine_from_dict(gh200_like(one_byte_s={"htod_pinned": 2e-6}), "test.toml")
    trace = Trace.from_columns({
        "kind": [OpKind.MEMCPY], "copy_kind": [CopyKind.HTOD], "src_mem": [MemKind.PINNED],
        "dst_mem": [MemKind.DEVICE], "bytes": [MIB], "start_ns": [0], "end_ns": [100_000],
    })
    result = AheadModel().project(trace, target, target)
    assert result.time_s[0] == pytest.approx(2e-6 + 1114128 / 450e9, rel=1e-12)
    assert any("NVLink-C2C" in n for n in result.notes)


@given(st.integers(1, 2**40), st.sampled_from(["read", "write"]))
def test_never_faster_than_the_link(n, direction):
    """C2C effective bandwidth never exceeds its data-sheet bandwidth."""
    link = machine_from_dict(gh200_like(), "test.toml").host_link(0)
    assert c2c.effective_bandwidth_bps(np.array([n]), link, direction)[0] <= 450e9 * (1 + 1e-12)
