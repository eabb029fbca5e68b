"""The arithmetic a kernel's name says it does: a data-sheet peak key (``fp32``, ``bf16_tensor``...) or none.

Kernel names carry their precision in three ways, all read here (case-insensitive):

* library naming: ``sgemm``/``scudnn`` (FP32), ``dgemm`` (FP64), ``hgemm``,
  ``h884``/``h1688``/``h16816`` (FP16), ``tf32``, ``bf16``, ``fp8``/``e4m3``...;
* template and parameter types of demangled names: ``float``, ``double``,
  ``__half``/``c10::Half``, ``__nv_bfloat16``/``c10::BFloat16``;
* tensor-core markers: ``tensorop_`` (CUTLASS), ``hmma``/``imma``/``dmma``,
  ``xmma``, ``wgmma``/``gmma``, the CUTLASS instruction shapes ``s16816``,
  ``h1688``, ``s884``..., ``tensor16x8x8``, Tensile's matrix-instruction tile
  ``_MI16x16x1_`` (AMD MFMA), and flash-attention kernels (``flash_fwd``...,
  which are built on ``mma``).

A name that says the kernel runs on the CUDA cores is vector work even when it
also carries a tensor-core marker: cuBLAS's FP32 GEMMs on Ampere and later are
``sm80_xmma_gemm_f32f32_..._ffma_...`` (``xmma`` is the library, ``ffma`` the
instruction), CUTLASS names its CUDA-core kernels ``_simt_``, cuBLAS its FP32
ones ``*_sgemm_*``. SIMT markers: ``simt``, the FMA instructions ``ffma``,
``hfma2``, ``dfma``, and ``sgemm``. Reading such a kernel at the TF32 tensor
peak would make it look 8-16x slower than the hardware allows.

A name may mention several types (``gemm_bf16bf16_bf16f32_f32``: BF16 inputs,
FP32 accumulation; ``layer_norm<c10::BFloat16, float>``): the narrowest input
type wins, in the order FP8, INT8, BF16, FP16, TF32, FP64, FP32, because the
narrow type is the one the kernel streams and computes with. A tensor-core
marker turns the precision into its ``*_tensor`` peak (FP32 with a tensor
marker means TF32 tensor cores: CUTLASS's ``s1688`` on Ampere; a marker with no
type, ``hmma``, means FP16). A name without any of these says nothing
(``None``): integer kernels (``Bitonic_Sort(int*, ...)``), copies, or names
stripped of their types. Keys are ``nodecast.machines.parts.PEAK_KEYS``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

#: Precision tokens, narrowest first (the first that matches wins).
_TYPES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((key, re.compile(rx, re.IGNORECASE)) for key, rx in (
    ("fp8", r"fp8|e4m3|e5m2|float8"),
    ("int8", r"int8|imma|i8816|s8s8|u8s8"),
    ("bf16", r"bf16|bfloat16"),
    ("fp16", r"fp16|half|(?<![bt])f16(?!\d)|hgemm|h884|h1688|h16816|hmma|hcudnn"),
    ("tf32", r"tf32"),
    ("fp64", r"double|fp64|dgemm|zgemm|dmma|(?<![a-z])f64|d884|d16816"),
    ("fp32", r"float|fp32|sgemm|cgemm|scudnn|(?<![a-z0-9])f32|s884|s1688|s16816"),
))
#: Tensor-core (matrix-core) markers.
_TENSOR = re.compile(r"(?<![a-z])tensorop(?=_)|hmma|imma|dmma|xmma|wgmma|gmma|[shdi](884|1688|16816|8816)|"
                     r"tensor\d+x\d+x\d+|_MI\d+x\d+x\d+_|flash_fwd|flash_bwd|fmha", re.IGNORECASE)
#: CUDA-core (SIMT) markers: they win over ``_TENSOR`` (module docstring). ``sgemm`` must start a token so that
#: tensor-core ``s1688gemm``-style shapes never match; the FMA instructions are whole tokens.
_SIMT = re.compile(r"simt|(?<![a-z])(ffma|hfma2|dfma)(?![a-z])|(?<![a-z0-9])sgemm", re.IGNORECASE)
#: Vector precision -> the tensor peak its tensor-core form uses.
_TENSOR_OF = {"fp8": "fp8_tensor", "int8": "int8_tensor", "bf16": "bf16_tensor", "fp16": "fp16_tensor",
              "tf32": "tf32_tensor", "fp64": "fp64_tensor", "fp32": "tf32_tensor", None: "fp16_tensor"}
#: Integer precisions have no vector FLOP peak: a kernel named for them says nothing about FLOP/s.
_NO_VECTOR_PEAK = ("int8", "fp8")


def name_precision(name: str | None) -> str | None:
    """The peak key a kernel name says (``fp32``, ``bf16_tensor``...), or None (module docstring)."""
    if not name:
        return None
    found = next((key for key, rx in _TYPES if rx.search(name)), None)
    if _TENSOR.search(name) and not _SIMT.search(name):
        return _TENSOR_OF[found]
    if found in _NO_VECTOR_PEAK:
        return None
    return "tf32_tensor" if found == "tf32" else found


def tensor_precision(name: str | None) -> str:
    """The tensor peak key of a kernel known to run on tensor cores (Nsight Compute's tensor pipe said so):
    its name's tensor precision, else the tensor form of the precision its name says, else ``fp16_tensor``
    (FP16 inputs are the only ones Volta and Turing tensor cores take)."""
    said = name_precision(name)
    if said is None:
        return "fp16_tensor"
    return said if said.endswith("_tensor") else _TENSOR_OF.get(said, "fp16_tensor")


def precisions_of(names: Sequence[str], name_id: np.ndarray) -> np.ndarray:
    """``name_precision`` of every op, an object array (None where the name says nothing or there is none).

    Each distinct name is parsed once; the result is gathered through ``name_id``
    (-1: no name).
    """
    lookup = np.array([*(name_precision(n) for n in names), None], dtype=object)
    return lookup[name_id]


class Precisions:
    """The precision of every op as small integer codes: ``keys[code]``, code -1 where the name says nothing.

    What the models use on large traces: each distinct name is parsed once and
    the per-op work is one integer gather, with no Python object per op.
    """

    __slots__ = ("codes", "keys")

    def __init__(self, names: Sequence[str], name_id: np.ndarray) -> None:
        per_name = [name_precision(n) for n in names]
        self.keys: list[str] = sorted({k for k in per_name if k is not None})
        index = {k: i for i, k in enumerate(self.keys)}
        lookup = np.array([*(index.get(k, -1) if k else -1 for k in per_name), -1], dtype=np.int16)  # type: ignore[arg-type]
        self.codes: np.ndarray = lookup[name_id]

    def __len__(self) -> int:
        return len(self.codes)

    def present(self) -> list[str]:
        """The keys some op has, in ``keys`` order."""
        if not self.keys:
            return []
        used = np.bincount(self.codes[self.codes >= 0], minlength=len(self.keys)) > 0
        return [k for k, u in zip(self.keys, used, strict=True) if u]

    def mask(self, key: str) -> np.ndarray:
        """Ops whose name says ``key``."""
        return self.codes == self.keys.index(key) if key in self.keys else np.zeros(len(self.codes), dtype=bool)
