"""Tests for nodecast.traces.api: the host-record table and the meaning of call names."""

from __future__ import annotations

import numpy as np
import pytest

from nodecast.traces.api import ApiCalls, ApiKind, Domain, base_name, call_kind


@pytest.mark.parametrize(("name", "base"), [
    ("cudaMemcpyAsync_v3020", "cudaMemcpyAsync"),
    ("cudaMemcpyAsync_ptsz_v7000", "cudaMemcpyAsync"),
    ("cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync"),
    ("cudaLaunchKernel", "cudaLaunchKernel"),
])
def test_base_name_drops_abi_suffixes(name, base):
    """Version and per-thread-stream suffixes of nsys and driver names are removed."""
    assert base_name(name) == base


@pytest.mark.parametrize(("name", "kind"), [
    ("cudaLaunchKernel_v7000", ApiKind.LAUNCH),
    ("cuLaunchKernel", ApiKind.LAUNCH),
    ("hipExtModuleLaunchKernel", ApiKind.LAUNCH),
    ("cudaGraphLaunch", ApiKind.LAUNCH),
    ("cudaMemcpy_v3020", ApiKind.MEMCPY),
    ("cudaMemcpyToSymbol", ApiKind.MEMCPY),
    ("cuMemcpyDtoHAsync_v2", ApiKind.MEMCPY_ASYNC),
    ("cudaMemsetAsync", ApiKind.MEMSET_ASYNC),
    ("cudaMemset_v3020", ApiKind.MEMSET),
    ("cudaThreadSynchronize_v3020", ApiKind.DEVICE_SYNC),
    ("cuCtxSynchronize", ApiKind.DEVICE_SYNC),
    ("cudaStreamSynchronize_ptsz_v7000", ApiKind.STREAM_SYNC),
    ("cuEventSynchronize", ApiKind.EVENT_SYNC),
    ("cudaEventRecord", ApiKind.EVENT_RECORD),
    ("cudaStreamWaitEvent", ApiKind.STREAM_WAIT_EVENT),
    ("cudaFree_v3020", ApiKind.FREE_SYNC),
    ("cudaFreeAsync_v11020", ApiKind.OTHER),
    ("cudaMemGetInfo", ApiKind.OTHER),
    ("cudaMalloc_v3020", ApiKind.OTHER),
])
def test_call_kind(name, kind):
    """Every runtime/driver name maps to what the graph builder must know about it."""
    assert call_kind(name) == kind


def test_rows_sorted_by_thread_start_and_enclosing_first():
    """Rows come out in (thread, start) order, an enclosing span before what it encloses."""
    api = ApiCalls.from_columns(
        {"start_ns": [50, 10, 10, 5], "end_ns": [60, 20, 40, 6], "thread": [1, 1, 1, 2],
         "domain": [0, 0, Domain.CPU_OP, 0], "name_id": [0, 0, 1, 0]},
        ["cudaLaunchKernel", "aten::add"],
    )
    assert api["thread"].tolist() == [1, 1, 1, 2]
    assert api["start_ns"].tolist() == [10, 10, 50, 5]
    assert api["end_ns"].tolist() == [40, 20, 60, 6]
    assert api.kinds().tolist() == [ApiKind.OTHER, ApiKind.LAUNCH, ApiKind.LAUNCH, ApiKind.LAUNCH]


def test_missing_required_column_is_refused():
    """An ApiCalls without end times cannot be built."""
    with pytest.raises(ValueError, match="end_ns"):
        ApiCalls.from_columns({"start_ns": np.zeros(2)}, [])
