"""CUPTI callback ids -> function names, for nvprof databases.

nvprof's ``CUPTI_ACTIVITY_KIND_RUNTIME`` and ``_DRIVER`` tables store a
callback id (``cbid``), not a name. The ids are CUPTI's enums
``CUpti_runtime_api_trace_cbid`` (cupti_runtime_cbid.h) and
``CUpti_driver_api_trace_cbid`` (cupti_driver_cbid.h), as shipped with the
CUDA toolkit; copies of both headers read for these tables:
github.com/iree-org/iree, third_party/cuda/include/cupti_runtime_cbid.h and
cupti_driver_cbid.h at commit 17e6cac5 (CUDA 11 era), and
github.com/ROCm/rocmProfileData, cupti_runtime_cbid.h at commit cbbb2314
(ids 1-273, CUDA 9). The ids only grow between CUDA versions, so older
databases read with the same table.

Only the functions whose meaning the graph builder needs (launches, copies,
memsets, synchronization, events, frees) and those seen in the nvprof
databases of ../shared/data/traces are listed; any other id reads as
``cudaRuntime#<id>`` / ``cuDriver#<id>`` (plain host work).
"""

from __future__ import annotations

#: CUpti_runtime_api_trace_cbid (cupti_runtime_cbid.h).
RUNTIME: dict[int, str] = {
    1: "cudaDriverGetVersion", 2: "cudaRuntimeGetVersion", 3: "cudaGetDeviceCount",
    4: "cudaGetDeviceProperties", 8: "cudaConfigureCall", 9: "cudaSetupArgument",
    10: "cudaGetLastError", 11: "cudaPeekAtLastError", 13: "cudaLaunch", 14: "cudaFuncSetCacheConfig",
    15: "cudaFuncGetAttributes", 16: "cudaSetDevice", 17: "cudaGetDevice", 19: "cudaSetDeviceFlags",
    20: "cudaMalloc", 21: "cudaMallocPitch", 22: "cudaFree", 23: "cudaMallocArray", 24: "cudaFreeArray",
    25: "cudaMallocHost", 26: "cudaFreeHost", 27: "cudaHostAlloc", 28: "cudaHostGetDevicePointer",
    30: "cudaMemGetInfo", 31: "cudaMemcpy", 32: "cudaMemcpy2D", 33: "cudaMemcpyToArray",
    34: "cudaMemcpy2DToArray", 35: "cudaMemcpyFromArray", 36: "cudaMemcpy2DFromArray",
    37: "cudaMemcpyArrayToArray", 38: "cudaMemcpy2DArrayToArray", 39: "cudaMemcpyToSymbol",
    40: "cudaMemcpyFromSymbol", 41: "cudaMemcpyAsync", 42: "cudaMemcpyToArrayAsync",
    43: "cudaMemcpyFromArrayAsync", 44: "cudaMemcpy2DAsync", 45: "cudaMemcpy2DToArrayAsync",
    46: "cudaMemcpy2DFromArrayAsync", 47: "cudaMemcpyToSymbolAsync", 48: "cudaMemcpyFromSymbolAsync",
    49: "cudaMemset", 50: "cudaMemset2D", 51: "cudaMemsetAsync", 52: "cudaMemset2DAsync",
    53: "cudaGetSymbolAddress", 54: "cudaGetSymbolSize", 55: "cudaBindTexture", 58: "cudaUnbindTexture",
    123: "cudaThreadExit", 126: "cudaThreadSynchronize", 129: "cudaStreamCreate", 130: "cudaStreamDestroy",
    131: "cudaStreamSynchronize", 132: "cudaStreamQuery", 133: "cudaEventCreate",
    134: "cudaEventCreateWithFlags", 135: "cudaEventRecord", 136: "cudaEventDestroy",
    137: "cudaEventSynchronize", 138: "cudaEventQuery", 139: "cudaEventElapsedTime", 140: "cudaMalloc3D",
    141: "cudaMalloc3DArray", 142: "cudaMemset3D", 143: "cudaMemset3DAsync", 144: "cudaMemcpy3D",
    145: "cudaMemcpy3DAsync", 147: "cudaStreamWaitEvent", 151: "cudaPointerGetAttributes",
    152: "cudaHostRegister", 153: "cudaHostUnregister", 155: "cudaDeviceEnablePeerAccess",
    160: "cudaMemcpyPeer", 161: "cudaMemcpyPeerAsync", 162: "cudaMemcpy3DPeer", 163: "cudaMemcpy3DPeerAsync",
    164: "cudaDeviceReset", 165: "cudaDeviceSynchronize", 166: "cudaDeviceGetLimit", 167: "cudaDeviceSetLimit",
    194: "cudaFreeMipmappedArray", 197: "cudaStreamAddCallback", 198: "cudaStreamCreateWithFlags",
    200: "cudaDeviceGetAttribute", 201: "cudaStreamDestroy", 202: "cudaStreamCreateWithPriority",
    205: "cudaDeviceGetStreamPriorityRange", 206: "cudaMallocManaged",
    207: "cudaOccupancyMaxActiveBlocksPerMultiprocessor", 211: "cudaLaunchKernel",
    213: "cudaLaunch_ptsz", 214: "cudaLaunchKernel_ptsz", 215: "cudaMemcpy_ptds", 216: "cudaMemcpy2D_ptds",
    223: "cudaMemcpyToSymbol_ptds", 224: "cudaMemcpyFromSymbol_ptds", 225: "cudaMemcpyAsync_ptsz",
    228: "cudaMemcpy2DAsync_ptsz", 231: "cudaMemcpyToSymbolAsync_ptsz", 232: "cudaMemcpyFromSymbolAsync_ptsz",
    233: "cudaMemset_ptds", 234: "cudaMemset2D_ptds", 235: "cudaMemsetAsync_ptsz",
    236: "cudaMemset2DAsync_ptsz", 239: "cudaStreamSynchronize_ptsz", 242: "cudaEventRecord_ptsz",
    243: "cudaMemset3D_ptds", 244: "cudaMemset3DAsync_ptsz", 245: "cudaMemcpy3D_ptds",
    246: "cudaMemcpy3DAsync_ptsz", 247: "cudaStreamWaitEvent_ptsz",
    251: "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", 252: "cudaMemPrefetchAsync",
    253: "cudaMemPrefetchAsync_ptsz", 269: "cudaLaunchCooperativeKernel",
    270: "cudaLaunchCooperativeKernel_ptsz", 273: "cudaFuncSetAttribute",
}

#: CUpti_driver_api_trace_cbid (cupti_driver_cbid.h).
DRIVER: dict[int, str] = {
    1: "cuInit", 2: "cuDriverGetVersion", 3: "cuDeviceGet", 4: "cuDeviceGetCount", 5: "cuDeviceGetName",
    6: "cuDeviceComputeCapability", 8: "cuDeviceGetProperties", 9: "cuDeviceGetAttribute",
    17: "cuCtxSynchronize", 18: "cuModuleLoad", 19: "cuModuleLoadData", 20: "cuModuleLoadDataEx",
    22: "cuModuleUnload", 23: "cuModuleGetFunction", 26: "cuModuleGetTexRef", 33: "cuMemFree",
    38: "cuMemFreeHost", 39: "cuMemHostAlloc", 43: "cuMemcpyHtoD", 45: "cuMemcpyDtoH", 47: "cuMemcpyDtoD",
    60: "cuMemcpyHtoDAsync", 62: "cuMemcpyDtoHAsync", 64: "cuMemcpyDtoDAsync", 71: "cuMemsetD8",
    73: "cuMemsetD16", 75: "cuMemsetD32", 89: "cuArrayDestroy", 99: "cuTexRefSetFormat", 115: "cuLaunch",
    116: "cuLaunchGrid", 117: "cuLaunchGridAsync", 118: "cuEventCreate", 119: "cuEventRecord",
    120: "cuEventQuery", 121: "cuEventSynchronize", 122: "cuEventDestroy", 123: "cuEventElapsedTime",
    124: "cuStreamCreate", 125: "cuStreamQuery", 126: "cuStreamSynchronize", 127: "cuStreamDestroy",
    216: "cuMemsetD8Async", 218: "cuMemsetD16Async", 220: "cuMemsetD32Async", 235: "cuCtxCreate_v2",
    242: "cuMemGetInfo_v2", 243: "cuMemAlloc_v2", 245: "cuMemFree_v2", 248: "cuMemcpy_v2",
    249: "cuMemsetD8_v2", 251: "cuMemsetD32_v2", 255: "cuTexRefSetAddress_v2",
    259: "cuDeviceTotalMem_v2", 276: "cuMemcpyHtoD_v2", 277: "cuMemcpyHtoDAsync_v2",
    278: "cuMemcpyDtoH_v2", 279: "cuMemcpyDtoHAsync_v2", 280: "cuMemcpyDtoD_v2",
    281: "cuMemcpyDtoDAsync_v2", 289: "cuMemcpy2DAsync_v2", 291: "cuMemcpy3DAsync_v2",
    294: "cuMemAllocHost_v2", 295: "cuStreamWaitEvent", 303: "cuCtxSetCurrent", 304: "cuCtxGetCurrent",
    305: "cuMemcpy", 306: "cuMemcpyAsync", 307: "cuLaunchKernel", 318: "cuMemcpyPeer",
    319: "cuMemcpyPeerAsync", 322: "cuCtxDestroy_v2", 325: "cuEventDestroy_v2", 326: "cuStreamDestroy_v2",
    332: "cuDeviceGetPCIBusId", 386: "cuDevicePrimaryCtxRetain", 388: "cuDevicePrimaryCtxSetFlags",
    398: "cuMemcpyDtoH_v2_ptds", 397: "cuMemcpyHtoD_v2_ptds", 421: "cuMemcpyHtoDAsync_v2_ptsz",
    422: "cuMemcpyDtoHAsync_v2_ptsz", 436: "cuStreamWaitEvent_ptsz", 440: "cuStreamSynchronize_ptsz",
    441: "cuEventRecord_ptsz", 442: "cuLaunchKernel_ptsz", 467: "cuMemPrefetchAsync",
    477: "cuLaunchCooperativeKernel", 482: "cuDeviceGetUuid", 514: "cuGraphLaunch",
}


def runtime_name(cbid: int) -> str:
    """Runtime function name of a CUPTI runtime callback id."""
    return RUNTIME.get(int(cbid), f"cudaRuntime#{int(cbid)}")


def driver_name(cbid: int) -> str:
    """Driver function name of a CUPTI driver callback id."""
    return DRIVER.get(int(cbid), f"cuDriver#{int(cbid)}")
