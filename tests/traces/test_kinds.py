"""Transfer classes: host copies whose host memory kind the trace does not record get their own classes."""

from __future__ import annotations

import numpy as np

from nodecast.traces.kinds import CopyKind, MemKind, OpKind, TransferClass, classify_transfers

TC = TransferClass


def test_unrecorded_host_memory_is_not_folded_into_pageable():
    """HtoD/DtoH copies with MemKind.UNKNOWN on the host side are htod_unknown/dtoh_unknown (issue 12, item 4)."""
    kind = np.full(6, OpKind.MEMCPY)
    copy = np.array([CopyKind.HTOD, CopyKind.HTOD, CopyKind.HTOD, CopyKind.DTOH, CopyKind.DTOH, CopyKind.DTOH])
    src = np.array([MemKind.UNKNOWN, MemKind.PAGEABLE, MemKind.PINNED, MemKind.DEVICE, MemKind.DEVICE, MemKind.DEVICE])
    dst = np.array([MemKind.DEVICE, MemKind.DEVICE, MemKind.DEVICE, MemKind.UNKNOWN, MemKind.PAGEABLE, MemKind.PINNED])
    got = classify_transfers(kind, copy, src, dst).tolist()
    assert got == [TC.HTOD_UNKNOWN, TC.HTOD_PAGEABLE, TC.HTOD_PINNED, TC.DTOH_UNKNOWN, TC.DTOH_PAGEABLE, TC.DTOH_PINNED]


def test_managed_host_memory_in_an_explicit_copy_is_staged_like_pageable():
    """An explicit copy from managed host memory is classed pageable (the driver stages it)."""
    got = classify_transfers(np.array([OpKind.MEMCPY]), np.array([CopyKind.HTOD]), np.array([MemKind.MANAGED]),
                             np.array([MemKind.DEVICE]))
    assert got.tolist() == [TC.HTOD_PAGEABLE]


def test_unknown_classes_have_keys_and_labels():
    """The new classes have table keys and readable labels."""
    assert (TC.HTOD_UNKNOWN.key, TC.DTOH_UNKNOWN.key) == ("htod_unknown", "dtoh_unknown")
    assert "unrecorded" in TC.HTOD_UNKNOWN.label


def _class_of(kind: int, copy: int, src: int, dst: int) -> TransferClass:
    """The classification rule, one op at a time, as the docstring of ``classify_transfers`` states it."""
    if kind != OpKind.MEMCPY:
        return TC.NOT_A_TRANSFER
    if copy == CopyKind.HTOD:
        return TC.HTOD_PINNED if src == MemKind.PINNED else TC.HTOD_UNKNOWN if src == MemKind.UNKNOWN \
            else TC.HTOD_PAGEABLE
    if copy == CopyKind.DTOH:
        return TC.DTOH_PINNED if dst == MemKind.PINNED else TC.DTOH_UNKNOWN if dst == MemKind.UNKNOWN \
            else TC.DTOH_PAGEABLE
    return {CopyKind.DTOD: TC.DTOD, CopyKind.PEER: TC.PEER, CopyKind.HTOH: TC.HTOH,
            CopyKind.UVM_HTOD: TC.HTOD_MANAGED, CopyKind.UVM_DTOH: TC.DTOH_MANAGED,
            CopyKind.UVM_DTOD: TC.DTOD_MANAGED}.get(copy, TC.OTHER)


def test_every_code_combination_follows_the_rule():
    """Every op kind, every int8 copy kind (unknown codes too) and memory kinds around the known ones: the rule."""
    kind, copy, src, dst = (a.ravel() for a in np.meshgrid(
        np.arange(-1, 5), np.arange(-128, 128), np.arange(-1, 9), np.arange(-1, 9), indexing="ij"))
    want = [_class_of(*op) for op in zip(kind.tolist(), copy.tolist(), src.tolist(), dst.tolist(), strict=True)]
    for dtype in (np.int8, np.int64):
        got = classify_transfers(kind.astype(dtype), copy.astype(dtype), src.astype(dtype), dst.astype(dtype))
        assert got.dtype == np.int8
        assert got.tolist() == want


def test_codes_beyond_int8_are_other_copies():
    """A copy kind code no CopyKind has, beyond the int8 range, is an unclassified copy, not a known one."""
    got = classify_transfers(np.full(2, OpKind.MEMCPY), np.array([258, -254]), np.zeros(2, int), np.zeros(2, int))
    assert got.tolist() == [TC.OTHER, TC.OTHER]


def test_one_op_kind_vocabulary():
    """Traces and operation graphs share one OpKind: a code means one thing everywhere. The Trace's codes are
    stored in nodecast's Arrow/Parquet files and keep their values; the graph's host kinds come after them."""
    from nodecast.graph.opgraph import OpKind as GraphKind
    from nodecast.traces.kinds import TRACE_KINDS

    assert GraphKind is OpKind
    assert {k.name: int(k) for k in OpKind} == {"KERNEL": 0, "MEMCPY": 1, "MEMSET": 2, "SYNC": 3, "API": 4,
                                                "WAIT": 5}
    assert OpKind.COPY is OpKind.MEMCPY  # the graph's word for a copy
    assert TRACE_KINDS == (OpKind.KERNEL, OpKind.MEMCPY, OpKind.MEMSET, OpKind.SYNC)
