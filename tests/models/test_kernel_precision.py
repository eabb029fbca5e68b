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


@pytest.mark.parametrize(("name", "key"), [
    # cuBLAS's FP32 GEMM on Ampere: an xmma kernel that runs FFMA on the CUDA cores, not TF32 tensor cores
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel"
     "__5x_cublas", "fp32"),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize256x64x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel"
     "__5x_cublas", "fp32"),
    # CUTLASS SIMT kernels (FP32, FP64 and FP16 on CUDA cores), also when the name carries an instruction shape
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_tn_align1>(cutlass_80_simt_sgemm_64x64_8x5_tn_align1::Params)",
     "fp32"),
    ("cutlass3x_sm100_simt_sgemm_f32_f32_f32_f32_f32_64x64x16_1x1x1_3_tnn_align1_bias_f32_relu", "fp32"),
    ("cutlass_simt_dgemm_128x128_8x2_nt_align1", "fp64"),
    ("cutlass_simt_hgemm_256x128_8x2_nt_align1", "fp16"),
    # the same xmma naming with the other CUDA-core FMA instructions (constructed: no trace here has them)
    ("sm80_xmma_gemm_f64f64_f64f64_f64_nt_n_tilesize64x64x8_stage3_warpsize2x2x1_dfma_aligna1_alignc1", "fp64"),
    ("sm80_xmma_gemm_f16f16_f16f16_f16_nt_n_tilesize128x128x8_stage3_warpsize2x2x1_hfma2_aligna2_alignc2", "fp16"),
    # ... while the tensor-core forms of the same families stay tensor work
    ("sm80_xmma_gemm_tf32tf32_tf32f32_f32_nt_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8", "tf32_tensor"),
    ("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_cgasize1x2x1_stage4_gmmastage2_warpgroupsize1x1x1_"
     "hgmma64x128x8", "tf32_tensor"),
    ("sm90_xmma_gemm_f64f64_f64f64_f64_nt_n_tilesize128x128x16_stage3_warpsize4x2x1_tensor16x8x16", "fp64_tensor"),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nt_align1>(cutlass_80_tensorop_s1688gemm_256x128"
     "_32x3_nt_align1::Params)", "tf32_tensor"),
])
def test_simt_names_are_vector_work(name, key):
    """A name that says it runs on the CUDA cores (``ffma``, ``simt``, cuBLAS ``sgemm``) is vector work, even
    when it also says ``xmma`` or carries an instruction shape: timing it against the TF32 tensor peak would
    make it look 8-16x slower than it can be."""
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
