"""NCCL and RCCL collectives in a trace: what a collective kernel's name says, filled into the Trace's columns.

Every profiler records a collective as the kernel NCCL (or RCCL, its ROCm port) launched. The libraries'
code generators name those kernels, and what a name says of the work it ran differs by generation:

- NCCL 2.7-2.18: ``ncclKernel_<Coll>_<ALGO>_<PROTO>_<RedOp>_<type>`` (``NCCL_KERN_NAME`` in
  ``src/collectives/device/common.h``). One kernel is compiled per collective, algorithm and type, for the LL
  protocol only ("Only generate inline kernels for LL"); ``src/enqueue.cc`` (``NCCL_FUNC5``) launches it for
  LL128 and Simple work too. The name gives the collective, the algorithm and the type, never the protocol.
  Broadcast and all-gather are compiled for ``int8_t`` alone (``NCCL_FUNCS3``), so their type is no data type.
  ``ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t`` is the send/receive kernel and also NCCL's generic kernel
  (``ncclKernelGeneric`` in ``src/enqueue.cc``): in the shared A100 training trace it ran all-reduce, all-gather
  and reduce-scatter as well (the PyTorch profiler's records around its launches say so).
- NCCL 2.19 and later: ``ncclDevKernel_<Coll>[_<RedOp>_<ty>]_<ALGO>_<PROTO>`` (``src/device/generate.py``,
  ``best_kernel``): one kernel per collective and type, named ``TREE_LL`` for tree work and ``RING_LL`` for every
  other algorithm (ring, NVLS, CollNet, PAT) and protocol. The name gives the collective, the type and whether a
  tree ran. ``ncclDevKernel_SendRecv`` sends and receives; ``ncclDevKernel_Generic`` runs any collective.
- NCCL 2.27 and later, symmetric memory: ``ncclSymkDevKernel_<Coll>_<algo>[_<red>_<ty>]``
  (``src/device/symmetric/generate.py``); their algorithms (``AGxLL_R``...) are none of ``Algorithm``'s.
- RCCL: ``ncclDevKernel_Generic[_<unroll>]`` runs any collective; ``ncclDevKernel_<Coll>_<ALGO>_<PROTO>_<RedOp>_
  <ty>[_acc<n>]_Specialized`` (``src/device/generate_specialized.py``) is compiled per algorithm and protocol,
  so both are read from it.
- NCCL 2.4-2.6: ``nccl<Coll><Algo>LLKernel_<op>_<ty>`` (``ncclAllReduceRingLLKernel_sum_f32``).

Names may come demangled with their arguments (``...(ncclDevComm*, unsigned long, ncclWork*)``), after ``void``,
or mangled (``_Z38ncclKernel_...``). Types: NCCL's short (``f32``, ``bf16``, ``u8``...) and C (``float``,
``__nv_bfloat16``...) spellings; NCCL compiles signed integer sums as unsigned ones (``equivalent_primary``), so
``u8`` reads as int8; integer types ``DType`` has no code for (int32, int64) read as unknown.

``from_names`` fills ``op_class``, ``dtype``, ``algorithm`` and ``protocol`` of every NCCL kernel from its name
(one pass over the distinct names, then one vectorized pass over the launches), where the reader found nothing
more specific: a Kineto record's collective (``kineto_comms``) wins, and a name whose collective is not the
record's gives nothing else either. A part of a name this module does not know reads as unknown, with a note.
The message size and group come only from the PyTorch profiler's records (``kineto_comms``) or an op table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from nodecast.traces.kinds import OpKind
from nodecast.traces.op_classes import Algorithm, DType, OpClass, Protocol

#: NCCL's and RCCL's collective names (``all_colls`` of their generate.py) -> op class.
_COLLS = {"AllReduce": OpClass.ALL_REDUCE, "AllGather": OpClass.ALL_GATHER, "AllGatherV": OpClass.ALL_GATHER,
          "ReduceScatter": OpClass.REDUCE_SCATTER, "Broadcast": OpClass.BROADCAST, "Reduce": OpClass.REDUCE,
          "SendRecv": OpClass.SEND_RECV, "AllToAllPivot": OpClass.ALL_TO_ALL, "AlltoAllPivot": OpClass.ALL_TO_ALL,
          "AllToAllGda": OpClass.ALL_TO_ALL}
#: The collectives whose kernels are compiled per data type (the others move bytes: their type is ``int8_t``).
_REDUCTIONS = (OpClass.ALL_REDUCE, OpClass.REDUCE, OpClass.REDUCE_SCATTER)
_ALGOS = {a.name: a for a in Algorithm if a is not Algorithm.UNKNOWN}
_PROTOS = {p.name: p for p in Protocol if p is not Protocol.UNKNOWN}
#: Type spellings in kernel names: NCCL's ``all_tys``, the C types of ``NCCL_KERN_NAME``, RCCL's, NCCL 2.4's.
_TYPES = {"i8": DType.INT8, "u8": DType.INT8, "int8_t": DType.INT8, "uint8_t": DType.INT8,
          "f16": DType.FP16, "half": DType.FP16, "f32": DType.FP32, "float": DType.FP32, "f64": DType.FP64,
          "double": DType.FP64, "bf16": DType.BF16, "__nv_bfloat16": DType.BF16, "hip_bfloat16": DType.BF16,
          "rccl_bfloat16": DType.BF16, "f8e4m3": DType.FP8, "f8e5m2": DType.FP8, "__nv_fp8_e4m3": DType.FP8,
          "__nv_fp8_e5m2": DType.FP8, "rccl_float8": DType.FP8, "rccl_bfloat8": DType.FP8,
          **dict.fromkeys(("i32", "u32", "i64", "u64", "int32_t", "uint32_t", "int64_t", "uint64_t"), DType.UNKNOWN)}

#: A kernel name's identifier: after ``void``, and the length of a mangled name (``_Z38ncclKernel_...``).
_IDENTIFIER = re.compile(r"\s*(?:void\s+)?(?:_Z(\d+))?((?:nccl|rccl)\w*)")
_OLD = re.compile(r"nccl(AllReduce|AllGather|ReduceScatter|Broadcast|Reduce)(Ring|Tree|CollNet)?(?:LL128|LL)?"
                  r"Kernel_([a-z]+)_([a-z0-9]+)")


@dataclass(frozen=True)
class KernelName:
    """What an NCCL/RCCL kernel's name says of the work it ran (UNKNOWN where it does not say)."""

    op_class: OpClass
    dtype: DType
    algorithm: Algorithm
    protocol: Protocol
    #: Parts of the name this module does not know (an algorithm, protocol, collective or type): for a note.
    unknown: tuple[str, ...] = ()
    #: The kernel runs any collective (NCCL's and RCCL's generic kernels): its name does not say which.
    generic: bool = False


def parse_kernel_name(name: str) -> KernelName | None:
    """What kernel ``name`` says of its collective (see the module docstring); None if it is no NCCL/RCCL kernel."""
    if "ccl" not in name:
        return None
    match = _IDENTIFIER.match(name)
    if match is None:
        return None
    ident = match.group(2)[:int(match.group(1))] if match.group(1) else match.group(2)
    for prefix, parse in (("ncclKernel_", _nccl_2_7), ("ncclDevKernel_", _dev_kernel),
                          ("ncclSymkDevKernel_", _symmetric)):
        if ident.startswith(prefix):
            return parse(ident[len(prefix):])
    old = _OLD.fullmatch(ident)
    if old:
        return _nccl_2_4(*old.groups())
    if "Kernel" in ident:  # an NCCL/RCCL kernel of a form not known here
        return KernelName(OpClass.UNKNOWN, DType.UNKNOWN, Algorithm.UNKNOWN, Protocol.UNKNOWN, (ident,))
    return None


def _take(text: str, vocabulary: dict) -> tuple[str, str]:
    """(the vocabulary word ``text`` starts with, or its first ``_``-part when none; the rest after it)."""
    for word in sorted(vocabulary, key=len, reverse=True):
        if text == word or text.startswith(word + "_"):
            return word, text[len(word) + 1:]
    first, _, rest = text.partition("_")
    return first, rest


class _Parts:
    """The parts of one name as they are read, with those not known kept for the note."""

    def __init__(self) -> None:
        self.unknown: list[str] = []

    def of(self, token: str, vocabulary: dict, default):  # noqa: ANN001, ANN202
        if token in vocabulary:
            return vocabulary[token]
        self.unknown.append(token)
        return default

    def result(self, op: OpClass, dtype: DType = DType.UNKNOWN, algorithm: Algorithm = Algorithm.UNKNOWN,
               protocol: Protocol = Protocol.UNKNOWN, *, generic: bool = False) -> KernelName:
        if op not in _REDUCTIONS:
            dtype = DType.UNKNOWN  # compiled for int8_t whatever the data: no data type
        if op == OpClass.UNKNOWN:  # a collective not known here: nothing else of it is taken
            algorithm, protocol = Algorithm.UNKNOWN, Protocol.UNKNOWN
        return KernelName(op, dtype, algorithm, protocol, tuple(self.unknown), generic)


def _nccl_2_7(rest: str) -> KernelName:
    """``<Coll>_<ALGO>_<PROTO>_<RedOp>_<type>``: collective, algorithm and type (NCCL 2.7-2.18)."""
    parts = _Parts()
    coll, rest = rest.split("_", 1) if "_" in rest else (rest, "")
    op = parts.of(coll, _COLLS, OpClass.UNKNOWN)
    algo, rest = _take(rest, _ALGOS)
    proto, rest = _take(rest, _PROTOS)
    _, _, type_ = rest.partition("_")
    if op == OpClass.SEND_RECV:  # also NCCL 2.12-2.18's generic kernel: its RING SIMPLE say nothing
        return parts.result(op, generic=True)
    parts.of(proto, _PROTOS, None)  # named LL whatever the protocol: only an unknown one is worth a note
    return parts.result(op, parts.of(type_, _TYPES, DType.UNKNOWN) if op in _REDUCTIONS else DType.UNKNOWN,
                        parts.of(algo, _ALGOS, Algorithm.UNKNOWN))


def _dev_kernel(rest: str) -> KernelName:
    """NCCL 2.19+ ``<Coll>[_<RedOp>_<ty>]_<ALGO>_<PROTO>``, ``SendRecv``, ``Generic``; RCCL's ``_Specialized``."""
    parts = _Parts()
    if re.fullmatch(r"Generic(_\d+)?", rest):
        return parts.result(OpClass.UNKNOWN, generic=True)
    if rest.endswith("_Specialized"):  # RCCL: <Coll>_<ALGO>_<PROTO>_<RedOp>_<ty>[_acc<n>], both read
        coll, rest = rest[:-len("_Specialized")].split("_", 1)
        op = parts.of(coll, _COLLS, OpClass.UNKNOWN)
        algo, rest = _take(rest, _ALGOS)
        proto, rest = _take(rest, _PROTOS)
        type_ = rest.split("_")[1] if rest.count("_") >= 1 else ""
        return parts.result(op, parts.of(type_, _TYPES, DType.UNKNOWN) if op in _REDUCTIONS else DType.UNKNOWN,
                            parts.of(algo, _ALGOS, Algorithm.UNKNOWN), parts.of(proto, _PROTOS, Protocol.UNKNOWN))
    coll, rest = rest.split("_", 1) if "_" in rest else (rest, "")
    op = parts.of(coll, _COLLS, OpClass.UNKNOWN)
    if op == OpClass.SEND_RECV:
        return parts.result(op)
    dtype = DType.UNKNOWN
    if op in _REDUCTIONS:
        _, rest = rest.split("_", 1) if "_" in rest else ("", rest)  # the reduction (Sum: every one runs in it)
        type_, _, rest = rest.partition("_")
        dtype = parts.of(type_, _TYPES, DType.UNKNOWN)
    algo, rest = _take(rest, _ALGOS)
    proto, _ = _take(rest, _PROTOS)
    parts.of(algo, _ALGOS, None)
    parts.of(proto, _PROTOS, None)
    # best_kernel: TREE work runs in the TREE kernel, every other algorithm in the RING one, every protocol in LL
    return parts.result(op, dtype, Algorithm.TREE if algo == "TREE" else Algorithm.UNKNOWN)


def _symmetric(rest: str) -> KernelName:
    """NCCL 2.27+ ``<Coll>_<algo>[_<red>_<ty>][_profile]``: collective and type; its own algorithms."""
    parts = _Parts()
    rest = rest.removesuffix("_profile")
    coll, rest = rest.split("_", 1) if "_" in rest else (rest, "")
    op = parts.of(coll, _COLLS, OpClass.UNKNOWN)
    type_ = rest.rsplit("_", 1)[-1] if op in _REDUCTIONS else ""
    return parts.result(op, parts.of(type_, _TYPES, DType.UNKNOWN) if op in _REDUCTIONS else DType.UNKNOWN)


def _nccl_2_4(coll: str, algo: str | None, op_name: str, type_: str) -> KernelName:
    """``nccl<Coll><Algo>LLKernel_<op>_<ty>`` (NCCL 2.4-2.6): collective, algorithm (Ring, Tree) and type."""
    parts = _Parts()
    op = _COLLS[coll]
    algorithm = {"Ring": Algorithm.RING, "Tree": Algorithm.TREE}.get(algo or "", Algorithm.UNKNOWN)
    if algo == "CollNet":
        parts.unknown.append(algo)  # before NCCL 2.14 told CollNet's direct and chain variants apart
    return parts.result(op, parts.of(type_, _TYPES, DType.UNKNOWN) if op in _REDUCTIONS else DType.UNKNOWN,
                        algorithm)


# -- the Trace -----------------------------------------------------------------------------------------------------

#: The columns a kernel name fills.
NAME_COLUMNS = ("op_class", "dtype", "algorithm", "protocol")


def nccl_names(names: list[str]) -> list[KernelName | None]:
    """``parse_kernel_name`` of each distinct kernel name (None: no NCCL/RCCL kernel)."""
    return [parse_kernel_name(n) if isinstance(n, str) else None for n in names]


def from_names(cols: dict[str, np.ndarray], names: list[str], notes: list[str]) -> None:
    """Fill ``NAME_COLUMNS`` of the NCCL/RCCL kernels among the column buffers ``cols`` from their names
    (``names``, indexed by ``name_id``), in place, and say in ``notes`` what the names left unknown.

    A cell a reader already filled keeps its value; where that is an op class other than the name's (a record's
    collective on NCCL's generic kernel), the name gives nothing. A trace without NCCL kernels is not touched: its
    columns stay one shared value.
    """
    parsed = nccl_names(names)
    if not any(parsed):
        return
    ids = cols["name_id"]
    table = {col: np.zeros(len(names) + 1, dtype=cols[col].dtype) for col in NAME_COLUMNS}
    is_nccl = np.zeros(len(names) + 1, dtype=bool)
    for i, p in enumerate(parsed):
        if p is not None:
            is_nccl[i] = True
            for col in NAME_COLUMNS:
                table[col][i] = getattr(p, col)
    rows = is_nccl[ids] & (cols["kind"] == OpKind.KERNEL)  # -1 (no name) indexes the trailing False
    if not rows.any():
        return
    named_op = table["op_class"][ids]
    agree = rows & ((cols["op_class"] == 0) | (cols["op_class"] == named_op))
    for col in NAME_COLUMNS:
        values = table[col][ids]
        fill = agree & (values != 0) & (cols[col] == 0)
        if fill.any():
            column = np.array(cols[col])  # a shared default is read-only: this op's values need their own column
            column[fill] = values[fill]
            cols[col] = column
    launches = np.bincount(ids[rows], minlength=len(names))
    _notes(parsed, names, launches, notes)


def _notes(parsed: list[KernelName | None], names: list[str], launches: np.ndarray, notes: list[str]) -> None:
    """What the names left unknown, once each (a Parquet trace read again keeps its notes)."""
    used = [(i, p) for i, p in enumerate(parsed) if p is not None and launches[i]]
    total = int(sum(launches[i] for i, _ in used))
    said = [f"{total:,} NCCL/RCCL kernel launches: collective, dtype and algorithm read from their names where "
            "the name says what ran; the protocol only from RCCL's specialized kernels (NCCL names each kernel by "
            "its LL variant whatever the protocol, src/device/generate.py)"]
    for i, p in used:
        if p.generic and p.op_class == OpClass.SEND_RECV:
            said.append(f"{_short(names[i])} ({launches[i]:,} launches) is NCCL's send/receive kernel and also its "
                        "generic kernel (NCCL 2.12-2.18, src/enqueue.cc ncclKernelGeneric), which runs any "
                        "collective: taken to be send/receive where no profiler record says otherwise")
        elif p.generic:
            said.append(f"{_short(names[i])} ({launches[i]:,} launches) is a generic kernel, which runs any "
                        "collective: its name does not say which (the PyTorch profiler's records do)")
    odd = [f"{_short(names[i])!r} ({', '.join(repr(u) for u in p.unknown)})" for i, p in used if p.unknown]
    if odd:
        said.append(f"NCCL/RCCL kernel names with parts nodecast does not know, read as unknown: {', '.join(odd[:3])}"
                    + (f" and {len(odd) - 3} more" if len(odd) > 3 else ""))
    notes.extend(n for n in said if n not in notes)


def _short(name: str) -> str:
    """A kernel name without its argument list (``ncclDevKernel_Generic(...)`` -> ``ncclDevKernel_Generic``)."""
    return name.split("(", 1)[0].strip()
