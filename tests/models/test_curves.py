"""Effective-bandwidth curves: size parsing, the synthetic trace, and the evaluated models."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.machines import load_machine
from nodecast.machines.loader import machine_from_dict
from nodecast.models.curves import (
    DEFAULT_ONE_BYTE_S,
    bandwidth_curves,
    parse_classes,
    parse_sizes,
    synthetic_trace,
)
from nodecast.traces import TransferClass

TC = TransferClass
TITAN = load_machine("titan")
MIB = 1048576


def titan_with(measured: dict) -> object:
    """Titan with a [measured] table added."""
    data = tomllib.loads(TITAN.path.read_text())
    data["measured"] = {"origin": "test bench", **measured}
    return machine_from_dict(data, "titan-test.toml")


def test_parse_size_range_powers_of_two():
    """1:1Gi is every power of two from 1 B to 1 GiB (31 sizes)."""
    sizes = parse_sizes("1:1Gi")
    assert sizes.size == 31 and sizes[0] == 1 and sizes[-1] == 2**30
    assert parse_sizes("3:5Ki").tolist() == [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    assert parse_sizes("1MiB,64Ki,64Ki").tolist() == [65536, MIB]


@pytest.mark.parametrize("text", ["1K:1M", "abc", "5Ki:1Ki", "1:2:3", "0", "", "5:7"])
def test_parse_sizes_errors(text):
    """Decimal or unknown units, reversed ranges and empty sweeps are InputErrors naming --sizes."""
    with pytest.raises(InputError, match="--sizes"):
        parse_sizes(text)


@pytest.mark.parametrize("text", ["1:99999999999999999999Gi", "1:2048Ti", "4" * 5000, "1Ki,1048577Gi", "1,1025Ti"])
def test_parse_sizes_above_one_pib(text):
    """Sizes beyond 2^50 B (or with thousands of digits) are one InputError, not a numpy TypeError."""
    with pytest.raises(InputError, match="--sizes"):
        parse_sizes(text)
    assert parse_sizes("1Ti:1024Ti").tolist()[-1] == 2**50


def test_parse_classes():
    """Class keys are read case-insensitively; unknown ones list the known keys."""
    assert parse_classes("HtoD_Pinned, dtod") == [TC.HTOD_PINNED, TC.DTOD]
    with pytest.raises(InputError, match="Known: htod_pageable"):
        parse_classes("htod_pinned,htoh")


def test_synthetic_trace_has_the_asked_classes():
    """One copy per class and size, classified back to the asked class; peer copies go gpu0 -> gpu1."""
    classes = [TC.HTOD_PINNED, TC.DTOH_PAGEABLE, TC.DTOD, TC.PEER, TC.HTOD_MANAGED]
    trace = synthetic_trace(classes, np.array([1, 1024]))
    assert trace.transfer_class.tolist() == [c for c in classes for _ in range(2)]
    assert trace["dst_device"][6:8].tolist() == [1, 1]
    assert (trace.duration_ns == 0).all()


def test_ahead_curve_at_one_mib_on_titan():
    """With no measured L+O anywhere the fallback 0.96 µs is used: 1 MiB / (0.96 + 172.0985 µs) = 6.059 GB/s."""
    # n_hat = 20 + 512 + 16384*20 + 1048576 = 1376788 B; 1376788 / 8e9 = 172.0985 µs
    curves = bandwidth_curves([TITAN], classes=[TC.HTOD_PINNED], sizes=np.array([MIB]), models=["ahead"])
    row = curves.table.iloc[0]
    assert row["time_s"] == pytest.approx(DEFAULT_ONE_BYTE_S + 172.0985e-6, rel=1e-12)
    assert row["bandwidth_bps"] == pytest.approx(MIB / (0.96e-6 + 172.0985e-6), rel=1e-12)
    assert curves.one_byte["titan"].origin[TC.HTOD_PINNED] == "fallback"
    assert "assumed 0.96 µs" in curves.one_byte_summary()[0]


def test_measured_one_byte_and_curves_used():
    """A target file's measured L+O is used and its measured curve points are collected."""
    target = titan_with({"one_byte_s": {"htod_pinned": 2e-6},
                         "curves": {"htod_pinned": {"sizes_bytes": [1024, MIB], "bandwidth_bps": [0.5e9, 5.9e9]}}})
    curves = bandwidth_curves([target], source=TITAN, classes=[TC.HTOD_PINNED], sizes=np.array([MIB]),
                              models=["ahead", "back-of-envelope"])
    ahead = curves.table[curves.table["model"] == "ahead"].iloc[0]
    assert ahead["time_s"] == pytest.approx(2e-6 + 172.0985e-6, rel=1e-12)
    assert curves.one_byte["titan"].origin[TC.HTOD_PINNED] == "target"
    assert curves.measured["bandwidth_bps"].tolist() == [0.5e9, 5.9e9]
    envelope = curves.table[curves.table["model"] == "back-of-envelope"].iloc[0]
    assert envelope["bandwidth_bps"] == pytest.approx(8e9)


def test_source_measured_one_byte_used_for_target():
    """When only the source file measures L+O, the target's curve uses it (AHEAD's fallback)."""
    source = titan_with({"one_byte_s": {"htod_pinned": 3e-6}})
    curves = bandwidth_curves([TITAN], source=source, classes=[TC.HTOD_PINNED], sizes=np.array([MIB]), models=["ahead"])
    assert curves.one_byte["titan"].origin[TC.HTOD_PINNED] == "source"
    assert curves.table.iloc[0]["time_s"] == pytest.approx(3e-6 + 172.0985e-6, rel=1e-12)


def test_peer_skipped_on_one_gpu_machine():
    """A single-GPU machine has no peer curve: NaN rows and a line saying why."""
    curves = bandwidth_curves([TITAN], classes=[TC.HTOD_PINNED, TC.PEER], sizes=np.array([1024, MIB]))
    peer = curves.table[curves.table["transfer_class"] == "peer"]
    assert peer["bandwidth_bps"].isna().all()
    assert curves.skipped == ["peer on titan: it has one GPU"]


def test_table_at_sizes_and_monotone_bandwidth():
    """The wide table has one column per asked size; AHEAD's bandwidth rises with size on Titan."""
    curves = bandwidth_curves([TITAN], classes=[TC.HTOD_PINNED, TC.DTOD], sizes=parse_sizes("1:1Gi"))
    wide = curves.at_sizes([1024, MIB])
    assert list(wide.columns) == [1024, MIB]
    ahead = curves.table[(curves.table["model"] == "ahead") & (curves.table["transfer_class"] == "htod_pinned")]
    assert np.all(np.diff(ahead["bandwidth_bps"].to_numpy()) > 0)
