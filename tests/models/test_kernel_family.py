"""Kernel families from names and op classes, and GEMM tiles from names."""

import numpy as np
import pytest

from nodecast.models.kernel_family import Family, families, name_family, name_tile
from nodecast.traces.op_classes import OpClass


@pytest.mark.parametrize(("name", "family"), [
    ("volta_sgemm_128x64_nn", Family.GEMM),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", Family.GEMM),
    ("Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1", Family.GEMM),
    ("matMul(float*, float*, float*, int, int)", Family.GEMM),
    ("void implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, true>(int)", Family.CONV),
    ("cudnn_infer_volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1", Family.CONV),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>", Family.ELEMENTWISE),
    ("void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(float*)", Family.SOFTMAX),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int)", Family.NORMALIZATION),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>", Family.REDUCTION),
    ("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4>>", Family.ATTENTION),
    ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda>", Family.COPY),
    ("vectorAdd(float const*, float const*, float*, int)", Family.ELEMENTWISE),
    ("Bitonic_Sort(int*, int, int)", Family.REDUCTION),
    ("quicksort(unsigned int*, int, int, int)", Family.REDUCTION),  # sorts go with reductions
    ("mystery_kernel_v2", Family.OTHER),
    ("", Family.OTHER),
])
def test_name_family(name, family):
    assert name_family(name) is family


def test_op_class_wins_over_the_name():
    names = ["volta_sgemm_128x64_nn", "mystery_kernel"]
    name_id = np.array([0, 1, 1, -1], dtype=np.int32)
    op_class = np.array([0, OpClass.SOFTMAX, 0, OpClass.BMM], dtype=np.int8)
    assert families(names, name_id, op_class).tolist() == [Family.GEMM, Family.SOFTMAX, Family.OTHER, Family.GEMM]


@pytest.mark.parametrize(("name", "tile"), [
    ("volta_sgemm_128x64_nn", (128, 64)), ("ampere_sgemm_32x32_sliced1x4_nn", (32, 32)),
    ("cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align4", (256, 128)), ("vectorAdd", None),
    ("gemm_bf16_m4096_n4096_k4096", None),
])
def test_name_tile(name, tile):
    assert name_tile(name) == tile
