"""What a PyTorch aten op computes, from the shapes the PyTorch profiler records (``record_shapes=True``).

With ``record_shapes`` the profiler writes, on every ``cpu_op`` event:

* ``args["Input Dims"]``: one entry per argument of the op's schema, a
  tensor's sizes (``[4, 197, 768]``; ``[]`` for a 0-d tensor, a scalar or
  None; a list of lists for a TensorList);
* ``args["Input type"]``: a tensor's element type as c10 names it
  (``float``, ``c10::BFloat16``, ``c10::Half``, ``long``...), else
  ``Scalar``, ``ScalarList``, ``TensorList`` or empty;
* in PyTorch 2.x also ``args["Concrete Inputs"]``: scalar arguments as text
  (``[16, 16]``, ``-1``, ``False``; empty for tensors and None).

``aten_work`` turns those into the Trace's work columns (``WORK_COLUMNS``)
with the op tables' conventions (``nodecast.traces.op_table``), so that a
model sees one meaning whichever input it came from (e: an operand's element
size in bytes; every FLOP figure counts a multiply-add as 2):

==============================  =====================  ====================================================
op (aten name)                  flops (FLOP)           work_bytes (least DRAM traffic, B)
==============================  =====================  ====================================================
mm, addmm: A[m,k] B[k,n]        2·m·n·k                e·(m·k + k·n + m·n) (addmm's bias not counted)
bmm, baddbmm: b problems        2·b·m·n·k              e·b·(m·k + k·n + m·n)
linear: input [..., m, k],      2·b·m·n·k              e·(b·m·k + k·n + b·m·n) (b: the input's leading dims;
weight [n, k]                                          the bias not counted)
matmul                          as linear when B is 2-D, as bmm when both are batched (broadcast)
convolution (cudnn, miopen...)  2·m·n·k of its         e·(input + weight + output elements); m = N·(output
                                implicit GEMM          pixels), n = out channels, k = C/groups·R·S; needs
                                                       stride/padding/dilation (Concrete Inputs); not for
                                                       transposed convolutions
softmax, log_softmax            5·elements             2·e·elements
layer_norm, rms_norm            8·elements             2·e·elements (the weights not counted)
elementwise (add, mul, gelu...) elements of the output e of each input x its elements + e x output elements
                                                       (broadcast shape; comparisons write 1-byte bools)
sum, mean, amax, amin           input elements         e·(input + output elements); needs the reduced dims
copy_                           0                      e_src·elements + e_dst·elements
attention (flash, efficient,    4·b·m·n·k              e·(2·Q + K + V elements) (Q read, O written);
sdpa): b = batch·heads, m                              causal masking not taken off, as op tables
queries, n keys, k head size
==============================  =====================  ====================================================

Shapes follow the op tables too: a GEMM's ``batch, m, n, k``; an op over a
tensor of shape [..., H] has m = the product of the leading dims and n = H
(softmax: H is the softmax dim; layer norm: the normalized elements;
reduction: m outputs of n reduced elements each), batch 1. The op's
``dtype`` is its largest tensor argument's (an int or bool tensor has no
DType code: 0, though its bytes count).

What is not known stays not known: FLOP and bytes are NaN, shape columns
``NOT_RECORDED`` (-1), where a needed value is absent (no ``Concrete Inputs``
in PyTorch 1.x traces: a softmax's FLOP and bytes, but not its m and n; a
reduction's FLOP but not its bytes), where the shapes are odd (not lists of
whole numbers, operands that do not multiply, numbers beyond 2^53), and for
every aten op not listed here (``aten::cat``, Triton kernels of compiled
graphs...). Nothing here raises: a profiler's own args never stop a trace
from loading.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any, NamedTuple

from nodecast.traces.op_classes import DType, OpClass, dtype_of
from nodecast.traces.trace import NOT_RECORDED

#: Largest size, element count or shape value kept: exact in a float64, far beyond any tensor.
_LIMIT = 1 << 53

#: Element sizes of the tensor types that have no DType (c10's names, as the profiler prints them), bytes.
_OTHER_SIZES = {"int": 4.0, "long": 8.0, "long int": 8.0, "short": 2.0, "bool": 1.0, "unsigned char": 1.0,
                "c10::complex<float>": 8.0, "c10::complex<double>": 16.0, "c10::complex<c10::half>": 4.0,
                "unsigned short": 2.0, "unsigned int": 4.0, "unsigned long": 8.0}


class Work(NamedTuple):
    """What one aten op computes (the Trace's work columns; NaN and NOT_RECORDED where unknown)."""

    op_class: OpClass
    dtype: DType
    flops: float = math.nan
    work_bytes: float = math.nan
    batch: int = NOT_RECORDED
    m: int = NOT_RECORDED
    n: int = NOT_RECORDED
    k: int = NOT_RECORDED


class _Tensor(NamedTuple):
    """One tensor argument: its sizes, element count and element size (bytes)."""

    dims: tuple[int, ...]
    numel: int
    size: float


#: (flops, work_bytes, batch, m, n, k) of an op, or None where they cannot be known.
_Shape = tuple[float, float, int, int, int, int]


@lru_cache(maxsize=256)
def _type_info(text: str) -> tuple[DType, float] | None:
    """(DType, element size in bytes) of a tensor type the profiler prints; None for a non-tensor argument."""
    dtype = dtype_of(text.removeprefix("c10::"))
    if dtype is not None:
        return dtype, dtype.bytes_per_element
    size = _OTHER_SIZES.get(text.strip().lower())
    return (DType.UNKNOWN, size) if size is not None else None


def _tensors(args: dict[str, Any]) -> tuple[list[_Tensor | None], DType, float] | None:
    """Every argument as a ``_Tensor`` (None: not a tensor), the op's dtype and element size (its largest
    tensor's, a known DType winning a tie); None when the shapes are missing or odd."""
    dims, types = args.get("Input Dims"), args.get("Input type")
    if type(dims) is not list or type(types) is not list or len(dims) != len(types):
        return None
    out: list[_Tensor | None] = []
    best: tuple[int, bool] = (-1, False)
    dtype, size = DType.UNKNOWN, math.nan
    for d, t in zip(dims, types, strict=True):
        info = _type_info(t) if type(t) is str else None
        if info is None:
            out.append(None)
            continue
        if type(d) is not list:
            return None
        for x in d:  # a plain loop: this runs for every tensor of every linked op
            if type(x) is not int or x < 0 or x > _LIMIT:
                return None
        numel = math.prod(d)
        if numel > _LIMIT:
            return None
        out.append(_Tensor(tuple(d), numel, info[1]))
        rank = (numel, info[0] != DType.UNKNOWN)
        if rank > best:
            best, dtype, size = rank, info[0], info[1]
    return out, dtype, size


def _ints(text: object) -> list[int] | None:
    """``[16, 16]`` or ``-1`` (Concrete Inputs) -> a list of ints; None when it is no such text."""
    if type(text) is not str:
        return None
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1].strip()
        if not body:
            return []
    try:
        return [int(part) for part in body.split(",")]
    except ValueError:
        return None


def _concrete(args: dict[str, Any], index: int) -> object:
    """Concrete Inputs entry ``index`` (text), or None when the trace has none there."""
    values = args.get("Concrete Inputs")
    return values[index] if type(values) is list and index < len(values) else None


def _rows(dims: tuple[int, ...], n: int) -> tuple[int, int]:
    """(m, n) of a tensor seen as m rows of n elements (0-d: one row of one)."""
    numel = math.prod(dims)
    return (numel // n if n else 0), n


def _result(flops: float, nbytes: float, batch: int, m: int, n: int, k: int) -> _Shape | None:
    """The shape tuple, None when a value is out of range (a damaged file's sizes)."""
    if max(batch, m, n, k) > _LIMIT or not (math.isfinite(flops) and math.isfinite(nbytes)):
        return None
    return flops, nbytes, batch, m, n, k


def _gemm(a: _Tensor, b: _Tensor, batch: int, m: int, n: int, k: int, e_out: float) -> _Shape | None:
    """A GEMM family op: 2·b·m·n·k FLOP; its operands read once and its output written once."""
    return _result(2.0 * batch * m * n * k, a.size * a.numel + b.size * b.numel + e_out * batch * m * n,
                   batch, m, n, k)


def _mm(t: list[_Tensor | None], first: int, batched: bool) -> _Shape | None:
    """mm/addmm (``first``: the index of A) or bmm/baddbmm (``batched``)."""
    if len(t) < first + 2 or t[first] is None or t[first + 1] is None:
        return None
    a, b = t[first], t[first + 1]
    rank = 3 if batched else 2
    if len(a.dims) != rank or len(b.dims) != rank or a.dims[-1] != b.dims[-2] or a.dims[:-2] != b.dims[:-2]:
        return None
    batch = a.dims[0] if batched else 1
    return _gemm(a, b, batch, a.dims[-2], b.dims[-1], a.dims[-1], a.size)


def _matmul(t: list[_Tensor | None]) -> tuple[OpClass, _Shape | None]:
    """aten::matmul: a linear when B is 1- or 2-D (A's leading dims are the batch), else a bmm over the
    broadcast batch dims; a 1-D A is one row."""
    if len(t) < 2 or t[0] is None or t[1] is None:
        return OpClass.GEMM, None
    a, b = t[0], t[1]
    if not a.dims or not b.dims:
        return OpClass.GEMM, None
    ad = a.dims if len(a.dims) > 1 else (1, *a.dims)
    bd = b.dims if len(b.dims) > 1 else (*b.dims, 1)
    if ad[-1] != bd[-2]:
        return OpClass.GEMM, None
    m, k, n = ad[-2], ad[-1], bd[-1]
    if len(bd) == 2:
        return OpClass.LINEAR, _gemm(a, b, math.prod(ad[:-2]), m, n, k, a.size)
    try:
        batch = math.prod(_broadcast(ad[:-2], bd[:-2]))
    except ValueError:
        return OpClass.BMM, None
    return OpClass.BMM, _gemm(a, b, batch, m, n, k, a.size)


def _linear(t: list[_Tensor | None]) -> _Shape | None:
    """aten::linear(input [..., k], weight [n, k], bias): b problems of m rows share the weight."""
    if len(t) < 2 or t[0] is None or t[1] is None:
        return None
    x, w = t[0], t[1]
    if not x.dims or len(w.dims) != 2 or x.dims[-1] != w.dims[1]:
        return None
    m = x.dims[-2] if len(x.dims) > 1 else 1
    return _gemm(x, w, math.prod(x.dims[:-2]), m, w.dims[0], w.dims[1], x.size)


def _broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast of shapes (numpy's rules); ValueError when they do not broadcast."""
    if all(s == shapes[0] for s in shapes):  # the common case: no broadcasting
        return shapes[0] if shapes else ()
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(rank):
        sizes = {s[len(s) - rank + axis] for s in shapes if len(s) - rank + axis >= 0} - {1}
        if len(sizes) > 1:
            msg = "shapes do not broadcast"
            raise ValueError(msg)
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


# Where the stride, padding and dilation (and the transposed flag) sit in each convolution's schema.
_CONV_ARGS = {
    "aten::conv1d": (3, 4, 5, None), "aten::conv2d": (3, 4, 5, None), "aten::conv3d": (3, 4, 5, None),
    "aten::convolution": (3, 4, 5, 6), "aten::_convolution": (3, 4, 5, 6),
    "aten::cudnn_convolution": (3, 2, 4, None), "aten::miopen_convolution": (4, 3, 5, None),
    "aten::miopen_depthwise_convolution": (4, 3, 5, None), "aten::_conv_depthwise2d": (4, 5, 6, None),
}
_TRANSPOSED = ("aten::cudnn_convolution_transpose", "aten::miopen_convolution_transpose",
               "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d")


def _conv(name: str, t: list[_Tensor | None], args: dict[str, Any]) -> _Shape | None:
    """A forward convolution as its implicit GEMM: m = N·output pixels, n = out channels, k = C/g·R·S.

    The output size needs stride, padding and dilation, which only ``Concrete Inputs`` records.
    """
    if len(t) < 2 or t[0] is None or t[1] is None:
        return None
    x, w = t[0], t[1]
    spatial = len(x.dims) - 2
    if spatial < 1 or len(w.dims) != len(x.dims):
        return None
    stride_at, pad_at, dilation_at, transposed_at = _CONV_ARGS[name]
    if transposed_at is not None and _concrete(args, transposed_at) != "False":
        return None
    stride, dilation = _ints(_concrete(args, stride_at)), _ints(_concrete(args, dilation_at))
    pad_text = _concrete(args, pad_at)
    padding = [0] if pad_text == "valid" else _ints(pad_text)
    if stride is None or dilation is None or (padding is None and pad_text != "same"):
        return None
    out = []
    for axis in range(spatial):
        size, r = x.dims[2 + axis], w.dims[2 + axis]
        s, dil = _axis(stride, axis), _axis(dilation, axis)
        if s is None or dil is None or s <= 0 or dil <= 0:
            return None
        if pad_text == "same":
            out.append(size)
            continue
        p = _axis(padding, axis)
        if p is None or p < 0:
            return None
        out.append((size + 2 * p - dil * (r - 1) - 1) // s + 1)
    if min(out) <= 0:
        return None
    m, n, k = x.dims[0] * math.prod(out), w.dims[0], math.prod(w.dims[1:])
    return _result(2.0 * m * n * k, x.size * (x.numel + w.numel + m * n), 1, m, n, k)


def _axis(values: list[int], axis: int) -> int | None:
    """A per-axis convolution parameter: one value for every axis, or one per axis."""
    if len(values) == 1:
        return values[0]
    return values[axis] if axis < len(values) else None


def _softmax(t: list[_Tensor | None], args: dict[str, Any]) -> _Shape | None:
    """5 FLOP and one read and write per element; m rows of n along the softmax dim (where recorded)."""
    if not t or t[0] is None:
        return None
    x = t[0]
    flops, nbytes = 5.0 * x.numel, 2.0 * x.size * x.numel
    dim = _ints(_concrete(args, 1))
    if dim is None or len(dim) != 1 or not -max(len(x.dims), 1) <= dim[0] < max(len(x.dims), 1):
        return flops, nbytes, NOT_RECORDED, NOT_RECORDED, NOT_RECORDED, NOT_RECORDED
    n = x.dims[dim[0]] if x.dims else 1
    return _result(flops, nbytes, 1, *_rows(x.dims, n), NOT_RECORDED)


def _layer_norm(t: list[_Tensor | None], args: dict[str, Any]) -> _Shape | None:
    """8 FLOP and one read and write per element; n: the normalized elements (``normalized_shape``, else the
    weight's size, else the last dim)."""
    if not t or t[0] is None or not t[0].dims:
        return None
    x = t[0]
    shape = _ints(_concrete(args, 1))
    weight = t[2] if len(t) > 2 else None
    if shape:
        n = math.prod(shape)
    elif weight is not None and weight.dims:
        n = weight.numel
    else:
        n = x.dims[-1]
    if n <= 0 or x.numel % n:
        return None
    return _result(8.0 * x.numel, 2.0 * x.size * x.numel, 1, *_rows(x.dims, n), NOT_RECORDED)


#: Elementwise ops whose output is a bool tensor (1 byte per element) whatever their inputs.
_BOOL_OUT = {"aten::eq", "aten::ne", "aten::lt", "aten::le", "aten::gt", "aten::ge", "aten::logical_and",
             "aten::logical_or", "aten::logical_not", "aten::logical_xor", "aten::isnan", "aten::isinf"}


def _elementwise(name: str, t: list[_Tensor | None], dtype_size: float) -> _Shape | None:
    """One FLOP per output element; every input read once, the output (their broadcast) written once."""
    inputs = [x for x in t if x is not None]
    if not inputs:
        return None
    try:
        out = _broadcast(*(x.dims for x in inputs))
    except ValueError:
        return None
    elements = math.prod(out)
    e_out = 1.0 if name in _BOOL_OUT else dtype_size
    nbytes = sum(x.size * x.numel for x in inputs) + e_out * elements
    return _result(float(elements), nbytes, 1, *_rows(out, out[-1] if out else 1), NOT_RECORDED)


def _reduction(t: list[_Tensor | None], args: dict[str, Any]) -> _Shape | None:
    """One FLOP per input element; bytes and shape need the reduced dims (Concrete Inputs: a list, or empty
    for all of them)."""
    if not t or t[0] is None:
        return None
    x = t[0]
    flops = float(x.numel)
    unknown = (flops, math.nan, NOT_RECORDED, NOT_RECORDED, NOT_RECORDED, NOT_RECORDED)
    values = args.get("Concrete Inputs")
    if type(values) is not list:
        return unknown
    text = values[1] if len(values) > 1 else ""
    dims = [] if text == "" else _ints(text)
    if dims is None:
        return unknown
    rank = len(x.dims)
    if not dims:  # None or []: every dim
        n = x.numel
    elif all(-max(rank, 1) <= d < max(rank, 1) for d in dims) and rank:
        n = math.prod(x.dims[d] for d in {d % rank for d in dims})
    else:
        return unknown
    m = x.numel // n if n else 0
    return _result(flops, x.size * (x.numel + m), 1, m, n, NOT_RECORDED)


def _copy(t: list[_Tensor | None]) -> _Shape | None:
    """copy_(self, src): no arithmetic; the source read once, the destination written once."""
    if len(t) < 2 or t[0] is None or t[1] is None:
        return None
    dst, src = t[0], t[1]
    return _result(0.0, src.size * src.numel + dst.size * dst.numel, 1,
                   *_rows(dst.dims, dst.dims[-1] if dst.dims else 1), NOT_RECORDED)


def _attention(t: list[_Tensor | None], heads_first: bool) -> _Shape | None:
    """QK^T and PV: 4·b·m·n·k FLOP over b = batch·heads (the query's); Q, K, V read and O written once.
    ``heads_first``: [batch, heads, seq, head size] (sdpa); else [batch, seq, heads, head size] (flash)."""
    if len(t) < 3 or any(x is None or len(x.dims) != 4 for x in t[:3]):
        return None
    q, key, v = t[0], t[1], t[2]
    if heads_first:
        batch, m, k = q.dims[0] * q.dims[1], q.dims[2], q.dims[3]
        n = key.dims[2]
    else:
        batch, m, k = q.dims[0] * q.dims[2], q.dims[1], q.dims[3]
        n = key.dims[1]
    nbytes = q.size * 2 * q.numel + key.size * key.numel + v.size * v.numel
    return _result(4.0 * batch * m * n * k, nbytes, batch, m, n, k)


#: (name, tensors, args, element size) -> (op class, shape or None).
_Rule = Callable[[str, list[_Tensor | None], dict[str, Any], float], tuple[OpClass, _Shape | None]]


_ELEMENTWISE = ("add", "add_", "sub", "sub_", "rsub", "mul", "mul_", "div", "div_", "neg", "neg_", "abs", "abs_",
                "exp", "exp_", "log", "log_", "log2", "log1p", "sqrt", "rsqrt", "pow", "reciprocal", "sgn", "sign",
                "relu", "relu_", "gelu", "gelu_", "silu", "silu_", "sigmoid", "sigmoid_", "tanh", "tanh_", "clamp",
                "clamp_", "clamp_min", "clamp_min_", "clamp_max", "clamp_max_", "where", "threshold_backward",
                "gelu_backward", "silu_backward", "sigmoid_backward", "tanh_backward", "addcmul_", "addcdiv_",
                "lerp_", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                "logical_not", "logical_xor", "isnan", "isinf")

#: aten op name -> what it computes. Only the op that launched a kernel counts: aten::linear's GEMM is usually
#: launched by the aten::addmm it calls, which is listed too.
_RULES: dict[str, _Rule] = {
    "aten::mm": lambda name, t, args, size: (OpClass.GEMM, _mm(t, 0, batched=False)),
    "aten::addmm": lambda name, t, args, size: (OpClass.GEMM, _mm(t, 1, batched=False)),
    "aten::bmm": lambda name, t, args, size: (OpClass.BMM, _mm(t, 0, batched=True)),
    "aten::baddbmm": lambda name, t, args, size: (OpClass.BMM, _mm(t, 1, batched=True)),
    "aten::matmul": lambda name, t, args, size: _matmul(t),
    "aten::linear": lambda name, t, args, size: (OpClass.LINEAR, _linear(t)),
    **dict.fromkeys(_CONV_ARGS, lambda name, t, args, size: (OpClass.CONV, _conv(name, t, args))),
    **dict.fromkeys(_TRANSPOSED, lambda name, t, args, size: (OpClass.CONV, None)),
    **dict.fromkeys(("aten::softmax", "aten::_softmax", "aten::log_softmax", "aten::_log_softmax",
                     "aten::_safe_softmax"), lambda name, t, args, size: (OpClass.SOFTMAX, _softmax(t, args))),
    **dict.fromkeys(("aten::layer_norm", "aten::native_layer_norm", "aten::rms_norm", "aten::_fused_rms_norm"),
                    lambda name, t, args, size: (OpClass.LAYERNORM, _layer_norm(t, args))),
    **dict.fromkeys((f"aten::{n}" for n in _ELEMENTWISE),
                    lambda name, t, args, size: (OpClass.ELEMENTWISE, _elementwise(name, t, size))),
    **dict.fromkeys(("aten::sum", "aten::mean", "aten::amax", "aten::amin", "aten::nansum"),
                    lambda name, t, args, size: (OpClass.REDUCTION, _reduction(t, args))),
    "aten::copy_": lambda name, t, args, size: (OpClass.COPY, _copy(t)),
    **dict.fromkeys(("aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
                     "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_cudnn_attention"),
                    lambda name, t, args, size: (OpClass.ATTENTION, _attention(t, heads_first=True))),
    **dict.fromkeys(("aten::_flash_attention_forward", "aten::_efficient_attention_forward"),
                    lambda name, t, args, size: (OpClass.ATTENTION, _attention(t, heads_first=False))),
}


def recognises(name: object) -> bool:
    """Whether ``aten_work`` knows what the op named ``name`` computes (its class at least)."""
    return type(name) is str and name in _RULES


def aten_work(name: str, args: object) -> Work | None:
    """What the aten op ``name`` with profiler ``args`` computes; None for an op not listed (module docstring).

    The class comes from the name alone; dtype, FLOP, bytes and shape from
    ``Input Dims``/``Input type``/``Concrete Inputs`` where present and sound.
    """
    rule = _RULES.get(name) if type(name) is str else None
    if rule is None:
        return None
    parsed = _tensors(args) if type(args) is dict else None
    if parsed is None:
        cls, _ = rule(name, [], {}, math.nan)
        types = args.get("Input type") if type(args) is dict else None
        return Work(cls, _first_dtype(types))
    tensors, dtype, size = parsed
    try:
        cls, shape = rule(name, tensors, args, size)
    except (TypeError, ValueError, ZeroDivisionError, IndexError, OverflowError):  # args no real op has
        cls, shape = rule(name, [], {}, size)[0], None
    if shape is None:
        return Work(cls, dtype)
    return Work(cls, dtype, *shape)


def _first_dtype(types: object) -> DType:
    """The first known DType among ``Input type`` entries (shapes odd or absent), else UNKNOWN."""
    if type(types) is not list:
        return DType.UNKNOWN
    for t in types:
        info = _type_info(t) if type(t) is str else None
        if info is not None and info[0] != DType.UNKNOWN:
            return info[0]
    return DType.UNKNOWN


def aten_works(names: list[object], args: list[object]) -> list[Work | None]:
    """``aten_work`` of many ops, each distinct (name, shapes, types, concrete inputs) worked out once: a training
    step repeats the same few hundred ops thousands of times."""
    seen: dict[tuple[object, ...], Work | None] = {}
    out: list[Work | None] = []
    for name, a in zip(names, args, strict=True):
        if type(name) is not str or name not in _RULES:
            out.append(None)
            continue
        if type(a) is not dict:
            out.append(aten_work(name, a))
            continue
        key = (name, repr(a.get("Input Dims")), repr(a.get("Input type")), repr(a.get("Concrete Inputs")))
        if key not in seen:
            seen[key] = aten_work(name, a)
        out.append(seen[key])
    return out
