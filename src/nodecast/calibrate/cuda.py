"""Thin layer over NVIDIA's cuda-python: devices, buffers, streams, events, NVRTC kernels.

Written against ``cuda.bindings.runtime`` / ``driver`` / ``nvrtc`` (cuda-python
>= 12.6; older releases are ``cuda.cudart`` / ``cuda.cuda`` / ``cuda.nvrtc``,
tried second). Every cuda-python call returns ``(error, *values)``;
``check`` turns a non-zero error into ``MeasureError`` with the call and the
error's name. cuda-python is imported here only, and only when a session
opens: importing nodecast never needs it.

NOTE: no line of this module has run on a GPU yet (the machine it was
written on had no NVIDIA driver); see docs/calibrate.md. Signatures were
checked against cuda-python 13.4 (``cudaMemPrefetchAsync`` takes a
``cudaMemLocation`` and flags since CUDA 13; CUDA 12 had a device number,
and ``cudaMemPrefetchAsync_v2`` for the location form - ``prefetch`` handles
all three).
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from nodecast.calibrate.run import MeasureError
from nodecast.errors import GPUUnavailableError

INSTALL_HINT = "Install the GPU extra: pip install '.[gpu]' in the nodecast checkout (NVIDIA's cuda-python and cupti-python)"
#: Error names that mean "out of memory".
_OOM = {"cudaErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY"}


@dataclass(frozen=True)
class Bindings:
    """The three cuda-python modules and cuda-python's version."""

    runtime: ModuleType
    driver: ModuleType
    nvrtc: ModuleType
    version: str


def load_bindings() -> Bindings:
    """Import cuda-python's runtime, driver and NVRTC bindings; GPUUnavailableError when it is not installed."""
    try:
        from cuda.bindings import driver, nvrtc, runtime
    except ImportError:
        try:
            from cuda import cuda as driver  # type: ignore[no-redef,attr-defined]
            from cuda import cudart as runtime  # type: ignore[no-redef,attr-defined]
            from cuda import nvrtc  # type: ignore[no-redef,attr-defined]
        except ImportError:
            raise GPUUnavailableError("cuda-python is not installed", hint=INSTALL_HINT) from None
    try:
        from importlib.metadata import version

        ver = version("cuda-python")
    except Exception:  # noqa: BLE001 - a version string is informative only
        ver = "unknown"
    return Bindings(runtime, driver, nvrtc, ver)


def _err_name(err: Any) -> str:
    return getattr(err, "name", None) or str(err)


def check(result: Any, call: str) -> Any:
    """Unpack a cuda-python ``(error, *values)`` result; MeasureError when error != 0.

    Returns None, the single value, or the tuple of values.
    """
    if isinstance(result, tuple):
        err, values = result[0], result[1:]
    else:
        err, values = result, ()
    if int(err) != 0:
        name = _err_name(err)
        raise MeasureError(f"{call} failed: {name} ({int(err)})", out_of_memory=name in _OOM)
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _version_text(v: int) -> str:
    """CUDA's 12040 -> ``12.4``."""
    return f"{v // 1000}.{(v % 1000) // 10}"


@dataclass(frozen=True)
class DeviceProps:
    """What nodecast reads of one CUDA device."""

    index: int
    name: str
    cc: tuple[int, int]
    total_bytes: int
    sms: int
    l2_bytes: int
    bus_id: str
    can_map_host: bool
    managed: bool
    concurrent_managed: bool
    max_threads_per_sm: int
    clock_khz: int


def host_view(address: int, nbytes: int, dtype: Any = np.uint8) -> np.ndarray:
    """A numpy view of ``nbytes`` of host memory at ``address`` (pinned or managed), no copy."""
    raw = (ctypes.c_uint8 * nbytes).from_address(address)
    return np.frombuffer(raw, dtype=np.uint8).view(dtype)


class PageableBuffer:
    """Page-aligned pageable host memory (an anonymous mmap), as Comm|Scope's ``aligned_alloc``.

    ``touch`` writes every byte from the calling thread, so that the pages
    exist and (first touch) live on that thread's NUMA node.
    """

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        #: The mapping's length: whole pages (what cudaHostRegister is given).
        self.mapped_bytes = -(-max(nbytes, 1) // mmap.PAGESIZE) * mmap.PAGESIZE
        self._mm = mmap.mmap(-1, self.mapped_bytes)
        whole = np.frombuffer(self._mm, dtype=np.uint8)
        self.address = int(whole.ctypes.data)
        self.array = whole[:nbytes]
        del whole

    def touch(self, value: int = 1) -> None:
        """Write every byte (memset)."""
        self.array.fill(value)

    def close(self) -> None:
        """Unmap (the numpy view must not be used afterwards)."""
        self.array = np.zeros(0, np.uint8)
        with contextlib.suppress(BufferError):  # a view is still alive somewhere; the GC unmaps it later
            self._mm.close()


class Cuda:
    """A CUDA session through cuda-python (runtime API for memory and copies, driver API for kernels)."""

    def __init__(self, b: Bindings) -> None:
        self.b = b
        self.rt = b.runtime
        self.drv = b.driver
        self.nvrtc = b.nvrtc
        self.devices: list[DeviceProps] = []
        self.driver_version = ""
        self.runtime_version = ""
        self._modules: dict[tuple[int, int], Any] = {}
        self._images: dict[tuple[int, tuple[str, int]], bytes] = {}

    # -- opening ------------------------------------------------------------------
    @classmethod
    def open(cls) -> Cuda:
        """Load cuda-python and find the devices; GPUUnavailableError without a driver or a device."""
        b = load_bindings()
        self = cls(b)
        try:
            err, count = self.rt.cudaGetDeviceCount()
        except Exception as exc:  # noqa: BLE001 - the driver library itself failed to load
            raise GPUUnavailableError(f"no usable CUDA driver ({exc})", hint=_DRIVER_HINT) from None
        if int(err) != 0:
            name = _err_name(err)
            what = {
                "cudaErrorNoDevice": "no CUDA device",
                "cudaErrorInsufficientDriver": f"no CUDA driver, or one too old for cuda-python {b.version}",
            }.get(name, "no usable CUDA driver")
            raise GPUUnavailableError(f"{what} (cudaGetDeviceCount returned {name})", hint=_DRIVER_HINT)
        if count == 0:
            raise GPUUnavailableError("no CUDA device", hint=_DRIVER_HINT)
        try:
            check(self.drv.cuInit(0), "cuInit")
            self.driver_version = _version_text(check(self.rt.cudaDriverGetVersion(), "cudaDriverGetVersion"))
            self.runtime_version = _version_text(check(self.rt.cudaRuntimeGetVersion(), "cudaRuntimeGetVersion"))
            self.devices = [self._props(i) for i in range(count)]
        except MeasureError as exc:
            raise GPUUnavailableError(f"the CUDA driver does not answer ({exc})", hint=_DRIVER_HINT) from None
        return self

    def _props(self, i: int) -> DeviceProps:
        p = check(self.rt.cudaGetDeviceProperties(i), "cudaGetDeviceProperties")
        name = p.name.decode(errors="replace") if isinstance(p.name, bytes) else str(p.name)
        attr = self.rt.cudaDeviceAttr
        clock = check(self.rt.cudaDeviceGetAttribute(attr.cudaDevAttrClockRate, i), "cudaDeviceGetAttribute")
        return DeviceProps(
            index=i,
            name=name.split("\x00", 1)[0].strip(),
            cc=(int(p.major), int(p.minor)),
            total_bytes=int(p.totalGlobalMem),
            sms=int(p.multiProcessorCount),
            l2_bytes=int(p.l2CacheSize),
            bus_id=f"{int(p.pciDomainID):04x}:{int(p.pciBusID):02x}:{int(p.pciDeviceID):02x}.0",
            can_map_host=bool(p.canMapHostMemory),
            managed=bool(p.managedMemory),
            concurrent_managed=bool(p.concurrentManagedAccess),
            max_threads_per_sm=int(p.maxThreadsPerMultiProcessor),
            clock_khz=int(clock),
        )

    # -- devices ------------------------------------------------------------------
    def set_device(self, i: int) -> None:
        """Make device ``i`` current (its primary context) on this thread."""
        check(self.rt.cudaSetDevice(i), f"cudaSetDevice({i})")

    def mem_info(self, i: int) -> tuple[int, int]:
        """(free, total) bytes of device ``i``."""
        self.set_device(i)
        free, total = check(self.rt.cudaMemGetInfo(), "cudaMemGetInfo")
        return int(free), int(total)

    def sync_device(self) -> None:
        """cudaDeviceSynchronize on the current device."""
        check(self.rt.cudaDeviceSynchronize(), "cudaDeviceSynchronize")

    # -- memory -------------------------------------------------------------------
    def malloc(self, n: int) -> int:
        """cudaMalloc on the current device."""
        return int(check(self.rt.cudaMalloc(max(n, 1)), f"cudaMalloc({n})"))

    def free(self, ptr: int) -> None:
        """cudaFree."""
        check(self.rt.cudaFree(ptr), "cudaFree")

    def memset(self, ptr: int, value: int, n: int) -> None:
        """cudaMemset (device or managed memory)."""
        check(self.rt.cudaMemset(ptr, value, n), "cudaMemset")

    def host_alloc(self, n: int, *, mapped: bool = False) -> int:
        """cudaHostAlloc, portable (pinned for every context), optionally mapped into the device address space."""
        flags = self.rt.cudaHostAllocPortable | (self.rt.cudaHostAllocMapped if mapped else 0)
        return int(check(self.rt.cudaHostAlloc(max(n, 1), flags), f"cudaHostAlloc({n})"))

    def free_host(self, ptr: int) -> None:
        """cudaFreeHost."""
        check(self.rt.cudaFreeHost(ptr), "cudaFreeHost")

    def host_register(self, address: int, n: int, *, mapped: bool = False) -> None:
        """cudaHostRegister (portable, as Comm|Scope), optionally mapped."""
        flags = self.rt.cudaHostRegisterPortable | (self.rt.cudaHostRegisterMapped if mapped else 0)
        check(self.rt.cudaHostRegister(address, n, flags), f"cudaHostRegister({n})")

    def host_unregister(self, address: int) -> None:
        """cudaHostUnregister."""
        check(self.rt.cudaHostUnregister(address), "cudaHostUnregister")

    def device_pointer(self, host_ptr: int) -> int:
        """cudaHostGetDevicePointer of mapped pinned memory."""
        return int(check(self.rt.cudaHostGetDevicePointer(host_ptr, 0), "cudaHostGetDevicePointer"))

    def malloc_managed(self, n: int) -> int:
        """cudaMallocManaged (attach global)."""
        return int(check(self.rt.cudaMallocManaged(max(n, 1), self.rt.cudaMemAttachGlobal), f"cudaMallocManaged({n})"))

    def prefetch(self, ptr: int, n: int, device: int | None, stream: Any) -> None:
        """cudaMemPrefetchAsync of managed memory to GPU ``device``, or to the host when ``device`` is None."""
        rt = self.rt
        v2 = getattr(rt, "cudaMemPrefetchAsync_v2", None)
        location_form = v2 is not None or "location" in (rt.cudaMemPrefetchAsync.__doc__ or "").split("\n", 1)[0]
        if location_form:
            loc = rt.cudaMemLocation()
            if device is None:
                loc.type = rt.cudaMemLocationType.cudaMemLocationTypeHost
                loc.id = 0
            else:
                loc.type = rt.cudaMemLocationType.cudaMemLocationTypeDevice
                loc.id = device
            fn = v2 or rt.cudaMemPrefetchAsync
            check(fn(ptr, n, loc, 0, stream), "cudaMemPrefetchAsync")
        else:
            dst = rt.cudaCpuDeviceId if device is None else device
            check(rt.cudaMemPrefetchAsync(ptr, n, dst, stream), "cudaMemPrefetchAsync")

    # -- streams and events -------------------------------------------------------
    def stream(self) -> Any:
        """A non-blocking stream on the current device."""
        return check(self.rt.cudaStreamCreateWithFlags(self.rt.cudaStreamNonBlocking), "cudaStreamCreateWithFlags")

    def destroy_stream(self, s: Any) -> None:
        """cudaStreamDestroy."""
        check(self.rt.cudaStreamDestroy(s), "cudaStreamDestroy")

    def sync_stream(self, s: Any) -> None:
        """cudaStreamSynchronize."""
        check(self.rt.cudaStreamSynchronize(s), "cudaStreamSynchronize")

    def event(self) -> Any:
        """A timing event on the current device."""
        return check(self.rt.cudaEventCreate(), "cudaEventCreate")

    def destroy_event(self, e: Any) -> None:
        """cudaEventDestroy."""
        check(self.rt.cudaEventDestroy(e), "cudaEventDestroy")

    def record(self, e: Any, s: Any) -> None:
        """cudaEventRecord."""
        check(self.rt.cudaEventRecord(e, s), "cudaEventRecord")

    def wait_event(self, s: Any, e: Any) -> None:
        """cudaStreamWaitEvent: ``s`` waits for ``e``."""
        check(self.rt.cudaStreamWaitEvent(s, e, 0), "cudaStreamWaitEvent")

    def sync_event(self, e: Any) -> None:
        """cudaEventSynchronize."""
        check(self.rt.cudaEventSynchronize(e), "cudaEventSynchronize")

    def elapsed_s(self, start: Any, stop: Any) -> float:
        """cudaEventElapsedTime in seconds (the API gives ms, resolution about 0.5 us)."""
        return float(check(self.rt.cudaEventElapsedTime(start, stop), "cudaEventElapsedTime")) * 1e-3

    def memcpy_async(self, dst: int, src: int, n: int, kind: str, s: Any) -> None:
        """cudaMemcpyAsync; ``kind`` is htod, dtoh, dtod or default (inferred from UVA pointers)."""
        k = self.rt.cudaMemcpyKind
        kinds = {"htod": k.cudaMemcpyHostToDevice, "dtoh": k.cudaMemcpyDeviceToHost,
                 "dtod": k.cudaMemcpyDeviceToDevice, "default": k.cudaMemcpyDefault}
        check(self.rt.cudaMemcpyAsync(dst, src, n, kinds[kind], s), f"cudaMemcpyAsync({kind}, {n})")

    # -- peers --------------------------------------------------------------------
    def can_access_peer(self, a: int, b: int) -> bool:
        """cudaDeviceCanAccessPeer(a, b)."""
        return bool(check(self.rt.cudaDeviceCanAccessPeer(a, b), "cudaDeviceCanAccessPeer"))

    def set_peer(self, a: int, b: int, enabled: bool) -> None:
        """Enable or disable access from ``a`` to ``b``'s memory (already in that state: no error)."""
        self.set_device(a)
        call = self.rt.cudaDeviceEnablePeerAccess(b, 0) if enabled else self.rt.cudaDeviceDisablePeerAccess(b)
        err = call[0] if isinstance(call, tuple) else call
        if _err_name(err) in ("cudaErrorPeerAccessAlreadyEnabled", "cudaErrorPeerAccessNotEnabled"):
            self.rt.cudaGetLastError()  # clear the (non-sticky) "already in that state" error
            return
        check(call, "cudaDeviceEnablePeerAccess" if enabled else "cudaDeviceDisablePeerAccess")

    # -- kernels ------------------------------------------------------------------
    def target(self, device: int) -> tuple[str, int]:
        """What NVRTC compiles for ``device``: (``sm``, XY) when it knows the device's own architecture (a
        CUBIN, no JIT in the driver), else (``compute``, the newest XY <= the device's) for PTX the driver
        JIT-compiles. A CUBIN avoids the driver rejecting PTX from an NVRTC newer than itself."""
        cc = self.devices[device].cc
        want = cc[0] * 10 + cc[1]
        try:
            archs = [int(a) for a in check(self.nvrtc.nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs")]
        except MeasureError:
            raise
        except Exception as exc:  # noqa: BLE001 - libnvrtc missing: pathfinder raises its own error types
            raise MeasureError(f"NVRTC is not available ({exc}); {_NVRTC_HINT}") from None
        if want in archs:
            return "sm", want
        usable = [a for a in archs if a <= want]
        if not usable:
            raise MeasureError(f"NVRTC supports no architecture <= sm_{want} (supports {archs}); {_NVRTC_HINT}")
        return "compute", max(usable)

    def arch(self, device: int) -> int:
        """The architecture number (XY) the kernels of ``device`` are compiled for."""
        return self.target(device)[1]

    def compile(self, source: str, target: tuple[str, int], options: Sequence[str] = ()) -> bytes:
        """A CUBIN (``sm``) or NUL-terminated PTX (``compute``) of ``source`` (cached)."""
        key = (hash(source) ^ hash(tuple(options)), target)
        if key in self._images:
            return self._images[key]
        nv = self.nvrtc
        kind, arch = target
        try:
            prog = check(nv.nvrtcCreateProgram(source.encode(), b"nodecast_calibrate.cu", 0, [], []), "nvrtcCreateProgram")
        except MeasureError:
            raise
        except Exception as exc:  # noqa: BLE001 - libnvrtc missing
            raise MeasureError(f"NVRTC is not available ({exc}); {_NVRTC_HINT}") from None
        opts = [f"--gpu-architecture={kind}_{arch}".encode(), *(o.encode() for o in options)]
        try:
            result = nv.nvrtcCompileProgram(prog, len(opts), opts)
            err = result[0] if isinstance(result, tuple) else result
            if int(err) != 0:
                size = check(nv.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
                log = b" " * size
                check(nv.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog")
                text = log.decode(errors="replace").strip("\x00 \n").replace("\n", " | ")
                raise MeasureError(f"NVRTC could not compile nodecast's kernels for {kind}_{arch}: {text}")
            if kind == "sm":
                size = check(nv.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
                image = b" " * size
                check(nv.nvrtcGetCUBIN(prog, image), "nvrtcGetCUBIN")
            else:
                size = check(nv.nvrtcGetPTXSize(prog), "nvrtcGetPTXSize")
                image = b" " * size
                check(nv.nvrtcGetPTX(prog, image), "nvrtcGetPTX")
                if not image.endswith(b"\x00"):
                    image += b"\x00"
        finally:
            nv.nvrtcDestroyProgram(prog)
        self._images[key] = image
        return image

    def module(self, device: int, source: str, options: Sequence[str] = ()) -> Module:
        """``source`` compiled and loaded into device ``device``'s primary context (cached)."""
        key = (device, hash(source) ^ hash(tuple(options)))
        if key not in self._modules:
            image = self.compile(source, self.target(device), options)
            self.set_device(device)
            check(self.rt.cudaFree(0), "cudaFree(0)")  # the primary context exists and is current
            buf = np.frombuffer(image, dtype=np.uint8)  # kept alive until the driver has copied it
            mod = check(self.drv.cuModuleLoadData(buf.ctypes.data), "cuModuleLoadData")
            self._modules[key] = Module(self, mod)
        return self._modules[key]

    def launch(self, fn: Any, grid: int, block: int, args: Sequence[tuple[str, float | int]], s: Any,
               shared_bytes: int = 0) -> None:
        """cuLaunchKernel with typed arguments (``ptr``/``u64``, ``i64``, ``i32``, ``u32``, ``f32``, ``f64``)."""
        types = {"ptr": np.uint64, "u64": np.uint64, "i64": np.int64, "i32": np.int32, "u32": np.uint32,
                 "f32": np.float32, "f64": np.float64}
        values = [np.array([v], dtype=types[t]) for t, v in args]
        params = np.array([v.ctypes.data for v in values], dtype=np.uint64)
        check(self.drv.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, shared_bytes, s, params.ctypes.data, 0),
              "cuLaunchKernel")


class Module:
    """A loaded CUDA module; ``fn(name)`` gives a kernel (cached)."""

    def __init__(self, cuda: Cuda, handle: Any) -> None:
        self.cuda = cuda
        self.handle = handle
        self._fns: dict[str, Any] = {}

    def fn(self, name: str) -> Any:
        """The CUfunction ``name`` (an ``extern "C"`` kernel)."""
        if name not in self._fns:
            self._fns[name] = check(self.cuda.drv.cuModuleGetFunction(self.handle, name.encode()),
                                    f"cuModuleGetFunction({name})")
        return self._fns[name]


_DRIVER_HINT = "calibrate and record need an NVIDIA GPU with its driver (check nvidia-smi)"
_NVRTC_HINT = ("the kernels (zero-copy, unified-memory demand, GPU peaks) need NVRTC: install the CUDA toolkit "
               "or pip install 'cuda-python[all]'")
