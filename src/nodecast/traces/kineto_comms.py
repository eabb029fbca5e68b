"""Which collective each NCCL/RCCL kernel of a Kineto trace ran: the PyTorch profiler's records around its launch.

PyTorch's NCCL process group records every collective it issues (``RECORD_PARAM_COMMS`` in
``torch/csrc/distributed/c10d/ParamCommsUtils.hpp``), around the launch of the collective's kernel:

- PyTorch 2.x: a ``record_param_comms`` cpu_op whose args say ``Collective name`` (``allreduce``,
  ``_allgather_base``...), ``dtype`` (a c10 ScalarType name: ``Float``, ``BFloat16``...), ``In msg nelems``,
  ``Out msg nelems`` and ``Group size``, around a ``nccl:<collective>`` user annotation.
- PyTorch 1.x (the shared A100 training trace): ``record_param_comms`` gives only the input's shape; the
  ``nccl:<collective>`` annotation has the shape and type of the tensor NCCL gets (``Input Dims``, ``Input
  type``), inside the ``c10d::<collective>_`` op whose shapes are [output, input]; the group is not recorded.

Each NCCL kernel (``collectives.parse_kernel_name``) is linked to the innermost record of each kind holding its
launch call, or named by its External id, as ``kineto_ops.launching_ops`` links aten ops. From them: the
collective (the record's name first, then the annotation's, then the c10d op's: it wins over the kernel's name,
which for NCCL's generic kernel says nothing), the dtype, the message size in bytes (nccl-tests' ``size``: the
elements x the element size, all_gather's output and reduce_scatter's input, the larger of the two for
send/receive, else the input), and the group (``Group size``; for all_gather and reduce_scatter without it, output
over input elements; else the ``world_size`` of the trace's ``distributedInfo``, with a note).

Bad values are notes, not errors (a trace must load): a group size that is not a positive number (the ratio or
nothing is used), an element count that is no count, a dtype of no known size (no message size), a message over
``_common.MAX_OP_BYTES``, a collective name not known here (the kernel keeps what its name says). A record that
launched several NCCL kernels gives each its collective and group, but no message size (how it splits is unknown).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from nodecast.traces._common import MAX_OP_BYTES
from nodecast.traces.collectives import nccl_names
from nodecast.traces.kinds import OpKind
from nodecast.traces.op_classes import DType, OpClass

RECORD = "record_param_comms"

#: Collective names of records, annotations and c10d ops, their ``_``, ``_base``, ``_into_tensor``, ``_coalesced``
#: and ``_single`` removed (``collective_of``). A barrier is an all-reduce of one element on NCCL.
_COLLECTIVES = {"allreduce": OpClass.ALL_REDUCE, "allgather": OpClass.ALL_GATHER,
                "reducescatter": OpClass.REDUCE_SCATTER, "alltoall": OpClass.ALL_TO_ALL,
                "alltoallv": OpClass.ALL_TO_ALL, "broadcast": OpClass.BROADCAST, "reduce": OpClass.REDUCE,
                "send": OpClass.SEND_RECV, "recv": OpClass.SEND_RECV, "sendrecv": OpClass.SEND_RECV,
                "barrier": OpClass.ALL_REDUCE}
_SUFFIXES = ("_coalesced", "_into_tensor", "_tensor", "_base", "_single")

#: c10 ScalarType names (``c10/core/ScalarType.h``, as ``dtype`` spells them) and C++ type names (as ``Input
#: type`` does), lower case without ``c10::`` -> (DType, bytes per element). Types DType has no code for keep
#: their size: an int32 all-to-all's message size is known.
_ELEMENTS: dict[str, tuple[DType, int]] = {
    **dict.fromkeys(("float", "float32"), (DType.FP32, 4)), **dict.fromkeys(("double", "float64"), (DType.FP64, 8)),
    **dict.fromkeys(("half", "float16"), (DType.FP16, 2)), "bfloat16": (DType.BF16, 2),
    **dict.fromkeys(("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"), (DType.FP8, 1)),
    **dict.fromkeys(("char", "signed char", "int8", "byte", "unsigned char", "uint8"), (DType.INT8, 1)),
    **dict.fromkeys(("int", "int32", "uint32"), (DType.UNKNOWN, 4)),
    **dict.fromkeys(("long", "long int", "int64", "uint64", "long long"), (DType.UNKNOWN, 8)),
    **dict.fromkeys(("short", "int16", "uint16"), (DType.UNKNOWN, 2)),
    **dict.fromkeys(("bool", "float8_e8m0fnu", "float4_e2m1fn_x2"), (DType.UNKNOWN, 1)),
    "complexhalf": (DType.UNKNOWN, 4), "complexfloat": (DType.UNKNOWN, 8), "complexdouble": (DType.UNKNOWN, 16),
}


def is_comm_record(cat: object, name: object) -> bool:
    """Whether a Kineto event is one of the records this module reads (see the module docstring)."""
    return cat in ("cpu_op", "user_annotation") and isinstance(name, str) and (
        name == RECORD or name.startswith(("nccl:", "c10d::")))


def nccl_rows(cols: dict[str, np.ndarray], names: list[str]) -> np.ndarray:
    """Rows of the NCCL/RCCL kernels (by their names) among the column buffers."""
    is_nccl = np.array([p is not None for p in nccl_names(names)] + [False], dtype=bool)
    return np.flatnonzero(is_nccl[cols["name_id"]] & (cols["kind"] == OpKind.KERNEL))


def collective_of(text: object) -> OpClass | None:
    """The op class a record's collective name spells (``_allgather_base`` -> all_gather), or None."""
    if not isinstance(text, str):
        return None
    key = text.strip().lower().removeprefix("nccl:").removeprefix("c10d::").strip("_")
    changed = True
    while changed:
        changed = False
        for suffix in _SUFFIXES:
            if key.endswith(suffix):
                key, changed = key[:-len(suffix)].rstrip("_"), True
    return _COLLECTIVES.get(key.replace("_", ""))


@dataclass(frozen=True)
class Collective:
    """What the records say of one collective: its op class, dtype, message bytes and group (-1: not known)."""

    op_class: OpClass
    dtype: DType
    message_bytes: int
    gpus: int


class _Notes:
    """Problems met in the records, counted per kind with the first example, said once each at the end."""

    def __init__(self) -> None:
        self.kinds: dict[str, tuple[int, str]] = {}

    def add(self, kind: str, example: str) -> None:
        count, first = self.kinds.get(kind, (0, example))
        self.kinds[kind] = (count + 1, first)


def comm_work(link: Callable[[list[dict[str, Any]]], np.ndarray], rows: np.ndarray, cols: dict[str, np.ndarray],
              names: list[str], comms: list[dict[str, Any]], doc: Any, notes: list[str]) -> None:
    """Fill ``op_class``, ``dtype``, ``bytes`` and ``gpus`` of the NCCL kernel ``rows`` from the records ``comms``
    (``is_comm_record`` events), in place; ``link(events)`` gives, per row, the index of the event among
    ``events`` that launched it (-1: none). ``doc`` is the trace's document (its ``distributedInfo``)."""
    kinds = {RECORD: [], "nccl:": [], "c10d::": []}
    for e in comms:
        name = str(e.get("name"))
        kinds[RECORD if name == RECORD else "nccl:" if name.startswith("nccl:") else "c10d::"].append(e)
    linked = np.column_stack([link(events) for events in kinds.values()])
    found = (linked >= 0).any(axis=1)
    if not found.any():
        return
    info = doc.get("distributedInfo") if isinstance(doc, dict) else None
    world = info.get("world_size") if isinstance(info, dict) else None
    world = world if type(world) is int and world > 0 else None
    problems = _Notes()
    keys, which = np.unique(linked[found], axis=0, return_inverse=True)
    which = which.reshape(-1)
    made = [_collective(*(events[i] if i >= 0 else None for events, i in zip(kinds.values(), key.tolist(),
                                                                          strict=True)), world, problems)
            for key in keys]
    alone = np.bincount(which)[which] == 1
    if not alone.all():
        problems.kinds["several"] = (int((~alone).sum()), "")
    at = rows[found]
    values = {"op_class": [], "dtype": [], "bytes": [], "gpus": []}
    for k, single in zip(which.tolist(), alone.tolist(), strict=True):
        c = made[k]
        values["op_class"].append(0 if c is None else c.op_class)
        values["dtype"].append(0 if c is None else c.dtype)
        values["bytes"].append(max(c.message_bytes, 0) if c is not None and single else 0)
        values["gpus"].append(-1 if c is None else c.gpus)
    named = np.array([p.op_class if p else 0 for p in nccl_names(names)] + [0])[cols["name_id"][at]]
    recorded = np.array(values["op_class"])
    # An all-to-all runs as grouped sends and receives (ProcessGroupNCCL::alltoall_base: ncclSend/ncclRecv)
    a2a = (recorded == OpClass.ALL_TO_ALL) & (named == OpClass.SEND_RECV)
    other = (recorded != 0) & (named != 0) & (recorded != named) & ~a2a
    if other.any():
        i = int(np.argmax(other))
        problems.add("other", f"{names[cols['name_id'][at][i]].split('(', 1)[0]} ran "
                              f"{', '.join(sorted({OpClass(c).key for c in recorded[other]}))}")
        problems.kinds["other"] = (int(other.sum()), problems.kinds["other"][1])
    for col, default in (("op_class", 0), ("dtype", 0), ("bytes", 0), ("gpus", -1)):
        v = np.array(values[col], dtype=cols[col].dtype)
        keep = v != default
        if keep.any():
            column = np.array(cols[col])  # a shared default is read-only
            column[at[keep]] = v[keep]
            cols[col] = column
    notes.extend(_said(problems, world))


def _collective(record: dict | None, annotation: dict | None, c10d: dict | None, world: int | None,
                problems: _Notes) -> Collective | None:
    """What the records linked to one launch say (see the module docstring); None: no collective they name."""
    args = [e.get("args") if isinstance(e, dict) and isinstance(e.get("args"), dict) else {}
            for e in (record, annotation, c10d)]
    spelled = [args[0].get("Collective name")] + [e.get("name") for e in (annotation, c10d) if e is not None]
    op = next((c for c in map(collective_of, spelled) if c is not None), None)
    if op is None:
        text = next((s for s in spelled if isinstance(s, str) and s), None)
        if text is not None and text.lower() != "wait":
            problems.add("name", repr(text))
        return None
    tensors = [_tensors(a) for a in args]  # (elements, type) of each tensor argument
    type_text = args[0].get("dtype") or next((t[0][1] for t in (tensors[1], tensors[0], tensors[2]) if t), None)
    dtype, size = _ELEMENTS.get(str(type_text).strip().lower().removeprefix("c10::"), (DType.UNKNOWN, None))
    n_in = _count(args[0], "In msg nelems", problems)
    n_in = n_in if n_in is not None else sum(n for n, _ in (tensors[1] or tensors[0])) or None
    n_out = _count(args[0], "Out msg nelems", problems)
    if n_out is None and len(tensors[2]) >= 2:  # a c10d op's shapes: [output, input]
        n_out = tensors[2][0][0]
    known = [n for n in (n_in, n_out) if n is not None]
    if op in (OpClass.ALL_GATHER, OpClass.REDUCE_SCATTER, OpClass.SEND_RECV):
        elements = max(known, default=None)  # all_gather's output, reduce_scatter's input (nccl-tests' size)
    else:
        elements = n_in if n_in is not None else n_out
    message = -1
    if elements is not None and size is None:
        problems.add("dtype", repr(type_text))
    elif elements is not None:
        message = elements * size
        if message > MAX_OP_BYTES:
            problems.add("huge", f"{message:,} B")
            message = -1
    gpus = _group(args[0].get("Group size"), problems)
    if gpus is None and op in (OpClass.ALL_GATHER, OpClass.REDUCE_SCATTER) and len(known) == 2 and min(known) > 0 \
            and max(known) % min(known) == 0:
        gpus = max(known) // min(known)
    if gpus is None and world is not None:
        problems.add("world", "")
        gpus = world
    return Collective(op, dtype, message, -1 if gpus is None or gpus > 32767 else gpus)


def _tensors(args: dict) -> list[tuple[int, str]]:
    """(elements, type) of each tensor argument in ``Input Dims``/``Input type`` (scalars and lists skipped)."""
    dims, types = args.get("Input Dims"), args.get("Input type")
    if not isinstance(dims, list) or not isinstance(types, list):
        return []
    out = []
    for d, t in zip(dims, types, strict=False):
        if isinstance(d, list) and d and all(type(x) is int and x >= 0 for x in d) and isinstance(t, str) and t:
            out.append((math.prod(d), t))
    return out


def _count(args: dict, key: str, problems: _Notes) -> int | None:
    """``args[key]`` as an element count (None: absent, or no count: noted)."""
    value = args.get(key)
    if value is None:
        return None
    if type(value) is int and value >= 0:
        return value
    problems.add("count", f"{key} {value!r}")
    return None


def _group(value: object, problems: _Notes) -> int | None:
    """A record's ``Group size`` (None: absent, or not a positive number of GPUs: noted)."""
    if value is None:
        return None
    if type(value) is int and value > 0:
        return value
    problems.add("group", f"group size {value!r}")
    return None


def _said(problems: _Notes, world: int | None) -> list[str]:
    """The notes, one per kind of problem met."""
    text = {
        "name": "collective records whose collective nodecast does not know (first: {first}): their kernels keep "
                "what their names say",
        "group": "collective records with a group size that is not a positive number of GPUs (first: {first}): "
                 "taken from output over input elements for all_gather and reduce_scatter, else not recorded",
        "count": "collective records with an element count that is no count (first: {first}): not used",
        "dtype": "collective records whose dtype has no element size nodecast knows (first: {first}): their "
                 "message size is not known",
        "huge": "collective records of a message over 2^50 B (1 PiB; first: {first}): not taken",
        "world": f"collectives whose group size the trace does not record: taken to be the world size {world} "
                 "(distributedInfo); the other ranks are assumed to run the same collectives",
        "several": "NCCL kernels launched by a record that launched others too: each gets its collective, none "
                   "the message size (how it splits is unknown)",
        "other": "NCCL kernels ran a collective other than their name's, as their records say (first: {first}): "
                 "the record's collective is kept",
    }
    return [f"{count:,} {text[kind].format(first=first)}" for kind, (count, first) in problems.kinds.items()]
