"""What an operation computes, beyond its kind: its op class (GEMM, softmax, all-reduce...) and its data type.

A profiler trace says a kernel ran; an op table (``nodecast.traces.op_table``)
or the PyTorch profiler's aten op that launched it says what it computed. Two
small vocabularies, stored as int8 codes in the Trace's ``op_class`` and
``dtype`` columns (0: not recorded), so that models, the fitting command and
``evaluate`` share one spelling:

* ``OpClass``: the op families of issue 19's op tables. ``gemm`` is C[m,n] =
  A[m,k] B[k,n]; ``bmm`` a batch of them; ``linear`` a GEMM whose batch folds
  into m; the collectives are NCCL's (nccl-tests' names).
* ``DType``: the element type the op streams and computes with, in the
  spelling of data-sheet peak keys where one exists (``fp32``, ``bf16``...).

Spellings people type map to one code (``OP_ALIASES``, ``DTYPE_ALIASES``):
``bfloat16`` -> ``bf16``, ``half`` -> ``fp16``, ``alltoall`` -> ``all_to_all``.

A collective also has the algorithm and protocol NCCL (or RCCL) ran it with, where the trace says
(``Trace['algorithm']``, ``Trace['protocol']``; ``nodecast.traces.collectives``): ``Algorithm`` and
``Protocol``, in NCCL's names (``src/include/device.h``: ``NCCL_ALGO_*``, ``NCCL_PROTO_*``).
"""

from __future__ import annotations

from enum import IntEnum


class OpClass(IntEnum):
    """What an op computes (``Trace['op_class']``); UNKNOWN (0) where nothing says."""

    UNKNOWN = 0
    GEMM = 1
    BMM = 2
    LINEAR = 3
    CONV = 4
    ELEMENTWISE = 5
    SOFTMAX = 6
    LAYERNORM = 7
    REDUCTION = 8
    ATTENTION = 9
    COPY = 10
    ALL_REDUCE = 11
    ALL_GATHER = 12
    REDUCE_SCATTER = 13
    ALL_TO_ALL = 14
    SEND_RECV = 15
    BROADCAST = 16
    REDUCE = 17

    @property
    def key(self) -> str:
        """The lower-case name used in op tables and on the command line (``all_reduce``)."""
        return self.name.lower()

    @property
    def collective(self) -> bool:
        """Whether this is a collective communication op (NCCL/RCCL)."""
        return self >= OpClass.ALL_REDUCE


class DType(IntEnum):
    """The element type of an op (``Trace['dtype']``); UNKNOWN (0) where nothing says."""

    UNKNOWN = 0
    FP64 = 1
    FP32 = 2
    TF32 = 3
    BF16 = 4
    FP16 = 5
    FP8 = 6
    FP8_BLOCK = 7
    NVFP4 = 8
    FP4 = 9
    INT8 = 10
    INT4 = 11

    @property
    def key(self) -> str:
        """The lower-case name (``bf16``)."""
        return self.name.lower()

    @property
    def bytes_per_element(self) -> float:
        """Size of one element in bytes (FP4/INT4: half a byte; block scales not counted)."""
        return _ELEMENT_BYTES[self]


class Algorithm(IntEnum):
    """The algorithm a collective ran with (``Trace['algorithm']``): NCCL's ``NCCL_ALGO_*`` (``src/include/device.h``;
    RCCL's are a subset); UNKNOWN (0) where the trace does not say."""

    UNKNOWN = 0
    RING = 1
    TREE = 2
    NVLS = 3
    NVLS_TREE = 4
    COLLNET_DIRECT = 5
    COLLNET_CHAIN = 6
    PAT = 7

    @property
    def key(self) -> str:
        """The lower-case name (``nvls_tree``)."""
        return self.name.lower()


class Protocol(IntEnum):
    """The protocol a collective ran with (``Trace['protocol']``): NCCL's ``NCCL_PROTO_*`` (``src/include/device.h``);
    UNKNOWN (0) where the trace does not say."""

    UNKNOWN = 0
    LL = 1
    LL128 = 2
    SIMPLE = 3

    @property
    def key(self) -> str:
        """The lower-case name (``ll128``)."""
        return self.name.lower()


_ELEMENT_BYTES = {DType.UNKNOWN: float("nan"), DType.FP64: 8.0, DType.FP32: 4.0, DType.TF32: 4.0, DType.BF16: 2.0,
                  DType.FP16: 2.0, DType.FP8: 1.0, DType.FP8_BLOCK: 1.0, DType.NVFP4: 0.5, DType.FP4: 0.5,
                  DType.INT8: 1.0, DType.INT4: 0.5}

#: Other spellings of op classes (op tables, NeuSight's and AIConfigurator's file names, NCCL's names).
OP_ALIASES: dict[str, OpClass] = {
    **{c.key: c for c in OpClass if c is not OpClass.UNKNOWN},
    "matmul": OpClass.GEMM, "mm": OpClass.GEMM, "ln": OpClass.LAYERNORM, "layer_norm": OpClass.LAYERNORM,
    "rmsnorm": OpClass.LAYERNORM, "norm": OpClass.LAYERNORM, "alltoall": OpClass.ALL_TO_ALL,
    "allreduce": OpClass.ALL_REDUCE, "allgather": OpClass.ALL_GATHER, "reducescatter": OpClass.REDUCE_SCATTER,
    "sendrecv": OpClass.SEND_RECV, "send": OpClass.SEND_RECV, "recv": OpClass.SEND_RECV,
    "memcpy": OpClass.COPY, "convolution": OpClass.CONV, "reduce_sum": OpClass.REDUCTION,
}

#: Other spellings of data types (PyTorch, NCCL and AIConfigurator names).
DTYPE_ALIASES: dict[str, DType] = {
    **{d.key: d for d in DType if d is not DType.UNKNOWN},
    "float64": DType.FP64, "double": DType.FP64, "float32": DType.FP32, "float": DType.FP32,
    "bfloat16": DType.BF16, "float16": DType.FP16, "half": DType.FP16, "e4m3": DType.FP8, "float8": DType.FP8,
    "float8_e4m3fn": DType.FP8, "fp8_e4m3": DType.FP8, "nvfp4": DType.NVFP4, "int8_wo": DType.INT8,
    "int4_wo": DType.INT4, "sq": DType.INT8,  # AIConfigurator's SmoothQuant GEMMs: int8 weights and activations
    # c10 type names as the PyTorch profiler prints them (``c10::`` removed): ROCm's fnuz fp8 formats too.
    "float8_e5m2": DType.FP8, "float8_e4m3fnuz": DType.FP8, "float8_e5m2fnuz": DType.FP8,
    "float4_e2m1fn_x2": DType.FP4, "signed char": DType.INT8,
}


def op_class_of(text: str) -> OpClass | None:
    """The op class a name spells (case-insensitive, ``-`` as ``_``), or None."""
    return OP_ALIASES.get(text.strip().lower().replace("-", "_"))


def dtype_of(text: str) -> DType | None:
    """The data type a name spells (case-insensitive), or None."""
    return DTYPE_ALIASES.get(text.strip().lower().replace("-", "_"))
