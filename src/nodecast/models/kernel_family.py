"""A kernel's family (GEMM, convolution, elementwise...) and its GEMM tile, read from its name or its op class.

The learned kernel model (``nodecast.models.kernel_learned``) weighs the data
sheets' ratios differently per family: a GEMM follows the tensor or FP32 peak,
an elementwise kernel the DRAM bandwidth, a small softmax the clock. Op tables
and corpora say the family outright (``Trace['op_class']``,
``nodecast.traces.op_classes.OpClass``); a profiler trace says it only through
the kernel's name, which library kernels spell consistently:

* GEMM: cuBLAS/CUTLASS ``*gemm*`` (``volta_sgemm_128x64_nn``,
  ``sm90_xmma_gemm_...``, ``cutlass_80_tensorop_...gemm``, ``Cijk_`` Tensile
  kernels on AMD), ``matmul``/``matMul``; ``*gemv*`` too;
* convolution: cuDNN ``scudnn``/``conv``/``winograd``/``implicit_convolve``,
  MIOpen ``Conv``/``igemm``... (a GEMM-named kernel launched by a convolution
  is a GEMM for this model: it computes like one);
* attention: ``flash``, ``fmha``, ``attention``;
* softmax, layer/RMS/batch normalization, reductions (``reduce``, ``sum``,
  ``argmax``, ``norm`` kernels that are not normalizations) and sorts
  (``sort``, ``topk``, ``bitonic``: data-dependent passes bound by latency
  like reductions);
* copy-like: ``copy``, ``transpose``, ``cat``, ``memcpy``, ``fill``, ``index``
  gathers and scatters;
* elementwise: PyTorch's ``elementwise_kernel``/``vectorized_elementwise``,
  ``unrolled_elementwise``, and names of pointwise ops (``add``, ``mul``,
  ``relu``, ``gelu``...).

A name that matches none is ``OTHER``. The family vocabulary here is coarser
than ``OpClass`` (``bmm`` and ``linear`` are GEMMs, collectives and copies are
not kernels this model projects): it is what the model's weights are indexed
by, written in its parameter file by key.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import IntEnum

import numpy as np

from nodecast.traces.op_classes import OpClass


class Family(IntEnum):
    """Kernel families of the learned model (``key``: the name in its parameter file)."""

    OTHER = 0
    GEMM = 1
    CONV = 2
    ELEMENTWISE = 3
    SOFTMAX = 4
    NORMALIZATION = 5
    REDUCTION = 6
    ATTENTION = 7
    COPY = 8

    @property
    def key(self) -> str:
        """Lower-case name (``gemm``)."""
        return self.name.lower()


#: Op class -> family (collectives have none: they are not kernels of this model).
FAMILY_OF_CLASS: dict[OpClass, Family] = {
    OpClass.GEMM: Family.GEMM, OpClass.BMM: Family.GEMM, OpClass.LINEAR: Family.GEMM, OpClass.CONV: Family.CONV,
    OpClass.ELEMENTWISE: Family.ELEMENTWISE, OpClass.SOFTMAX: Family.SOFTMAX,
    OpClass.LAYERNORM: Family.NORMALIZATION, OpClass.REDUCTION: Family.REDUCTION,
    OpClass.ATTENTION: Family.ATTENTION, OpClass.COPY: Family.COPY,
}

#: Name patterns, tried in order (first match wins): attention before GEMM (flash kernels say gemm in places),
#: convolution before GEMM (``implicit_convolve_sgemm`` is a convolution), normalization before reduction.
_PATTERNS: tuple[tuple[Family, re.Pattern[str]], ...] = tuple((f, re.compile(rx, re.IGNORECASE)) for f, rx in (
    (Family.ATTENTION, r"flash|fmha|attention|attn|sdpa"),
    (Family.CONV, r"conv|scudnn|winograd|cudnn|miopen|igemm_(fwd|bwd|wrw)|dgrad|wgrad|fprop|col2im|im2col"),
    (Family.GEMM, r"gemm|gemv|matmul|cijk_|cublas|cutlass|xmma|wgmma|_mma_|dot_?prod|dotprod"),
    (Family.SOFTMAX, r"softmax"),
    (Family.NORMALIZATION, r"layer_?norm|rms_?norm|batch_?norm|group_?norm|instance_?norm|bn_(fw|bw)|"
                           r"normali[sz]"),
    (Family.REDUCTION, r"reduce|reduction|argmax|argmin|cumsum|scan|_sum_|sum_kernel|norm_kernel|max_kernel|"
                       r"topk|sort|bitonic|subseqmax"),
    (Family.COPY, r"copy|transpose|memcpy|memset|fill|cat_|catarray|gather|scatter|index|embedding|permute|"
                  r"pad|clone|contiguous"),
    (Family.ELEMENTWISE, r"elementwise|pointwise|vectoradd|vector_add|_add_|add_kernel|mul_kernel|relu|gelu|silu|"
                         r"tanh|sigmoid|dropout|axpy|saxpy|triad|scale|matrix_sum|bias"),
))


def name_family(name: str | None) -> Family:
    """The family a kernel name says (module docstring); OTHER when none matches or there is no name."""
    if not name:
        return Family.OTHER
    return next((f for f, rx in _PATTERNS if rx.search(name)), Family.OTHER)


def families(names: Sequence[str], name_id: np.ndarray, op_class: np.ndarray | None = None) -> np.ndarray:
    """Family code (int8) of every op: from its op class where the trace records one, else from its name.

    Each distinct name is read once; ``name_id`` indexes ``names`` (-1: no name).
    """
    lookup = np.array([*(name_family(n) for n in names), Family.OTHER], dtype=np.int8)
    out = lookup[name_id]
    if op_class is not None:
        by_class = np.zeros(max(OpClass) + 1, dtype=np.int8) - 1
        for c, f in FAMILY_OF_CLASS.items():
            by_class[c] = f
        given = by_class[op_class]
        out = np.where(given >= 0, given, out).astype(np.int8)
    return out


_TILE = re.compile(r"(?<![0-9x])(\d{2,3})x(\d{2,3})(?:x\d{1,3})?(?![0-9])")


def name_tile(name: str | None) -> tuple[int, int] | None:
    """The (rows, columns) output tile a GEMM kernel's name gives (``sgemm_128x64_nn`` -> (128, 64)), or None."""
    if not name:
        return None
    m = _TILE.search(name)
    if m is None:
        return None
    a, b = int(m.group(1)), int(m.group(2))
    return (a, b) if 16 <= a <= 512 and 16 <= b <= 512 else None
