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
