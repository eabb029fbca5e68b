"""Kernel-name precision: the data-sheet peak a kernel's name says it runs at, or none."""

from __future__ import annotations

import numpy as np
import pytest

from nodecast.models.kernel_precision import name_precision, precisions_of, tensor_precision


@pytest.mark.parametrize(("name", "key"), [
    # real names from the shared traces and the kernel zoo
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
     "bf16_tensor"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8>(cutlass_80_tensorop_bf16"
     "_s16816gemm_relu_bf16_64x64_64x6_tn_align8::Params)", "bf16_tensor"),
    ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1"
     "_tensor16x8x8_alignc4_execute_kernel", "tf32_tensor"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, "
     "c10::BFloat16 const*)", "bf16"),
    ("ampere_sgemm_32x32_sliced1x4_tn", "fp32"),
    ("cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1", "fp32"),
    ("vectorAdd(float const *, float const *, float*, int)", "fp32"),
    ("batched_transpose_128x4_half", "fp16"),
    ("volta_h884gemm_64x64_ldg8_nn", "fp16_tensor"),
    ("void k<double>(double*, int)", "fp64"),
    # names that say nothing (integers, no types), and a CamelCase word that merely contains 'TensorOp'
    ("Bitonic_Sort(int*, int, int, int)", None),
    ("quicksort(int*, int)", None),
    ("SubTensorOpWithScalar1d", None),
    ("", None),
])
def test_name_precision(name, key):
    """The narrowest type a name mentions wins; a tensor-core marker makes it the tensor peak."""
    assert name_precision(name) == key


def test_tensor_precision_defaults_to_fp16():
    """A kernel the tensor pipe ran but whose name says nothing is FP16 (Volta/Turing tensor cores)."""
    assert tensor_precision("cleanup(float*)") == "tf32_tensor"
    assert tensor_precision("cleanup") == "fp16_tensor"
    assert tensor_precision("volta_h884gemm") == "fp16_tensor"


def test_precisions_of_gathers_by_name_id():
    """Per op through name_id; -1 (no name) reads None."""
    out = precisions_of(["a(float*)", "b(double*)"], np.array([1, -1, 0, 1]))
    assert out.tolist() == ["fp64", None, "fp32", "fp64"]
