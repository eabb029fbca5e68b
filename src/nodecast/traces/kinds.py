"""Enumerations of the Trace vocabulary, independent of any profiler.

Readers map their profiler's numbering onto these (nvprof uses CUPTI's
memory-kind numbering; Nsight Systems exports shift it by one; see
../shared/reference/FORMATS.md C.4). Array copies are folded into the
direction they move data (host->array is a host-to-device copy) and keep
``MemKind.ARRAY`` on the array side.

``OpKind`` is also the vocabulary of the operation graph (``graph.opgraph``),
so that a code means one thing everywhere: a Trace's rows are the first four
kinds (``TRACE_KINDS``, stored as such in nodecast's Arrow and Parquet
files), a graph's ops the GPU kinds and the host kinds API and WAIT after them.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np


class OpKind(IntEnum):
    """What an operation is: GPU work, a trace's synchronization record, or a graph's host op.

    The codes are stored (a Trace's ``kind`` column in Arrow and Parquet
    files): a new kind takes the next free code, never an old one.
    """

    KERNEL = 0
    MEMCPY = 1
    MEMSET = 2
    SYNC = 3  # a trace's record of the host waiting (no GPU work; never an op of a graph)
    API = 4  # a graph's host runtime/driver call, or a framework span enclosing calls
    WAIT = 5  # a graph's return of a blocking call: it ends after what the call waits for
    COPY = 1  # the graph's name for MEMCPY (the same kind)


#: The kinds a Trace row can have (a file holding another code is refused).
TRACE_KINDS = (OpKind.KERNEL, OpKind.MEMCPY, OpKind.MEMSET, OpKind.SYNC)


class CopyKind(IntEnum):
    """Direction of a copy. ``UVM_*`` are unified-memory page migrations."""

    NONE = 0  # not a copy (kernel, memset, sync)
    UNKNOWN = 1
    HTOD = 2
    DTOH = 3
    DTOD = 4
    HTOH = 5
    PEER = 6
    UVM_HTOD = 7
    UVM_DTOH = 8
    UVM_DTOD = 9


class MemKind(IntEnum):
    """Kind of memory on one side of a copy (CUPTI ``CUpti_ActivityMemoryKind`` numbering)."""

    UNKNOWN = 0
    PAGEABLE = 1
    PINNED = 2
    DEVICE = 3
    ARRAY = 4
    MANAGED = 5
    DEVICE_STATIC = 6
    MANAGED_STATIC = 7


class TransferClass(IntEnum):
    """What a transfer model needs to know: direction plus the host memory kind.

    The names (lower-case) are the keys of measured values in machine files.
    """

    NOT_A_TRANSFER = 0
    HTOD_PAGEABLE = 1
    HTOD_PINNED = 2
    DTOH_PAGEABLE = 3
    DTOH_PINNED = 4
    DTOD = 5
    PEER = 6
    HTOD_MANAGED = 7
    DTOH_MANAGED = 8
    HTOH = 9
    DTOD_MANAGED = 10
    OTHER = 11  # a copy nodecast cannot classify (unknown direction)
    HTOD_UNKNOWN = 12  # host->device from host memory of a kind the trace does not record
    DTOH_UNKNOWN = 13  # device->host to host memory of a kind the trace does not record

    @property
    def key(self) -> str:
        """Lower-case key used in machine files and tables (``htod_pinned``)."""
        return self.name.lower()

    @property
    def label(self) -> str:
        """Human label (``HtoD pinned``)."""
        return _LABELS[self]


_LABELS = {
    TransferClass.NOT_A_TRANSFER: "not a transfer",
    TransferClass.HTOD_PAGEABLE: "HtoD pageable",
    TransferClass.HTOD_PINNED: "HtoD pinned",
    TransferClass.DTOH_PAGEABLE: "DtoH pageable",
    TransferClass.DTOH_PINNED: "DtoH pinned",
    TransferClass.DTOD: "DtoD",
    TransferClass.PEER: "peer (GPU-GPU)",
    TransferClass.HTOD_MANAGED: "HtoD managed (UM)",
    TransferClass.DTOH_MANAGED: "DtoH managed (UM)",
    TransferClass.HTOH: "HtoH",
    TransferClass.DTOD_MANAGED: "DtoD managed (UM)",
    TransferClass.OTHER: "other copy",
    TransferClass.HTOD_UNKNOWN: "HtoD host memory unrecorded",
    TransferClass.DTOH_UNKNOWN: "DtoH host memory unrecorded",
}

#: Host memory kinds a user may state for copies whose trace does not record it (``--host-memory``).
HOST_MEMORY_KINDS = ("pinned", "pageable")
#: The class each unrecorded-kind class becomes when the kind is stated.
STATED_CLASS = {
    ("pinned", TransferClass.HTOD_UNKNOWN): TransferClass.HTOD_PINNED,
    ("pinned", TransferClass.DTOH_UNKNOWN): TransferClass.DTOH_PINNED,
    ("pageable", TransferClass.HTOD_UNKNOWN): TransferClass.HTOD_PAGEABLE,
    ("pageable", TransferClass.DTOH_UNKNOWN): TransferClass.DTOH_PAGEABLE,
}

#: TransferClass of a copy by its CopyKind code (indexed by the int8 code read as uint8); HtoD and DtoH are 0
#: here and take their class from the host side's memory kind; a code no CopyKind has is an unclassified copy.
_BY_COPY_KIND = np.full(256, TransferClass.OTHER, dtype=np.int8)
_BY_COPY_KIND[[CopyKind.HTOD, CopyKind.DTOH]] = 0
for _copy, _class in ((CopyKind.DTOD, TransferClass.DTOD), (CopyKind.PEER, TransferClass.PEER),
                      (CopyKind.HTOH, TransferClass.HTOH), (CopyKind.UVM_HTOD, TransferClass.HTOD_MANAGED),
                      (CopyKind.UVM_DTOH, TransferClass.DTOH_MANAGED), (CopyKind.UVM_DTOD, TransferClass.DTOD_MANAGED)):
    _BY_COPY_KIND[_copy] = _class
del _copy, _class


def _host_class(host_mem: np.ndarray, pageable: TransferClass, pinned: TransferClass,
                unknown: TransferClass) -> np.ndarray:
    """int8 class of host copies by their host side's memory kind: pinned, unknown, else pageable (staged)."""
    out = (host_mem == MemKind.PINNED).view(np.int8) * np.int8(pinned - pageable)
    out += (host_mem == MemKind.UNKNOWN).view(np.int8) * np.int8(unknown - pageable)
    out += np.int8(pageable)
    return out


def classify_transfers(
    kind: np.ndarray, copy_kind: np.ndarray, src_mem: np.ndarray, dst_mem: np.ndarray
) -> np.ndarray:
    """Vectorized TransferClass (int8) for every op of a trace.

    A host<->device copy whose host side is ``MemKind.UNKNOWN`` (nvprof's
    GPU-trace CSV, ROCm's Kineto copies) is ``HTOD_UNKNOWN`` /
    ``DTOH_UNKNOWN``: the transfer models project it both ways, pinned and
    pageable, unless the user states the kind (``--host-memory``). Managed
    host memory in an explicit copy is staged by the driver like pageable
    memory and classed so. A copy kind code no ``CopyKind`` has is ``OTHER``.
    """
    # NOTE: a table lookup by copy kind and integer arithmetic on the masks, not one masked assignment per
    # class: an assignment through a mask costs several passes over the trace, this about one per step.
    copy_kind = np.asarray(copy_kind)
    if copy_kind.dtype == np.int8:
        codes = copy_kind.view(np.uint8)
    else:  # any other integer: codes beyond int8 are no CopyKind (-1 reads as 255: OTHER)
        codes = np.where((copy_kind >= 0) & (copy_kind < 128), copy_kind, -1).astype(np.int8).view(np.uint8)
    out = _BY_COPY_KIND.take(codes)
    htod = copy_kind == CopyKind.HTOD
    if htod.any():
        out += htod.view(np.int8) * _host_class(
            np.asarray(src_mem), TransferClass.HTOD_PAGEABLE, TransferClass.HTOD_PINNED, TransferClass.HTOD_UNKNOWN)
    dtoh = copy_kind == CopyKind.DTOH
    if dtoh.any():
        out += dtoh.view(np.int8) * _host_class(
            np.asarray(dst_mem), TransferClass.DTOH_PAGEABLE, TransferClass.DTOH_PINNED, TransferClass.DTOH_UNKNOWN)
    out *= (np.asarray(kind) == OpKind.MEMCPY).view(np.int8)
    return out
