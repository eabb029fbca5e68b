"""CUPTI activity records -> rows of the Nsight Systems SQLite export tables (pure).

A record is any object with CUPTI's fields as attributes (cupti-python's
``ActivityKernel9``, ``ActivityMemcpy6``... use snake_case: ``copy_kind``,
``src_kind``, ``device_id``) or a dict with the same keys; tests build them
as plain dicts. ``Converter.convert`` turns one into a row: a dict whose
``table`` key names the nsys table (``KERNEL``, ``MEMCPY``, ``MEMSET``,
``SYNCHRONIZATION``, ``RUNTIME``, ``GPU`` for TARGET_INFO_GPU, and the
bookkeeping row ``CONTEXT``) and whose other keys are that table's column
names (FORMATS.md C.3), so ``nodecast.traces.nsys`` reads a recorded trace
like an ``nsys export``.

Numbering:

* copy kinds: CUPTI's ``CUpti_ActivityMemcpyKind`` 0-10 is nsys's
  ``ENUM_CUDA_MEMCPY_OPER`` 0-10; unified-memory migrations (CUPTI's
  unified-memory counter records of kind BYTES_TRANSFER_HTOD/DTOH/DTOD)
  become nsys's copy kinds 11-13, with both memory kinds UNKNOWN, correlation
  id 0 and the migration cause, as nsys writes them;
* memory kinds: CUPTI's ``CUpti_ActivityMemoryKind`` is 0 UNKNOWN,
  1 PAGEABLE ... 7 MANAGED_STATIC; nsys's ``ENUM_CUDA_MEM_KIND`` is shifted
  by one, 0 PAGEABLE ... 6 MANAGED_STATIC, 7 UNKNOWN (FORMATS.md C.4):
  ``nsys_mem_kind`` maps one to the other;
* synchronization types: CUPTI's numbering is nsys's ``ENUM_CUPTI_SYNC_TYPE``;
* API calls: runtime records get ``eventClass`` 0, driver records 1
  (``ENUM_NSYS_EVENT_CLASS``); ``globalTid`` = pid << 24 | tid and
  ``globalPid`` = pid << 24, nsys's serialized ids.

Units: CUPTI timestamps are integer ns and stay so; CUPTI's device record
gives memory bandwidth in KB/s and clock in kHz, TARGET_INFO_GPU wants B/s
and Hz.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# cupti.ActivityKind values (cupti-python 13.4; tests compare them with cupti when it is installed).
KIND_MEMCPY = 1
KIND_MEMSET = 2
KIND_KERNEL = 3
KIND_DRIVER = 4
KIND_RUNTIME = 5
KIND_DEVICE = 8
KIND_CONTEXT = 9
KIND_CONCURRENT_KERNEL = 10
KIND_MEMCPY2 = 22
KIND_UNIFIED_MEMORY_COUNTER = 25
KIND_SYNCHRONIZATION = 38

#: Activity kinds ``nodecast record`` enables (CONTEXT only to map a synchronization's context to its device).
ENABLED_KINDS = (KIND_CONCURRENT_KERNEL, KIND_MEMCPY, KIND_MEMCPY2, KIND_MEMSET, KIND_SYNCHRONIZATION,
                 KIND_RUNTIME, KIND_DRIVER, KIND_DEVICE, KIND_CONTEXT, KIND_UNIFIED_MEMORY_COUNTER)

# cupti.ActivityUnifiedMemoryCounterKind values -> nsys copy kinds.
UM_BYTES_HTOD = 1
UM_BYTES_DTOH = 2
UM_BYTES_DTOD = 8
UM_COPY_KIND = {UM_BYTES_HTOD: 11, UM_BYTES_DTOH: 12, UM_BYTES_DTOD: 13}

#: nsys's ENUM_CUDA_MEM_KIND value for UNKNOWN.
NSYS_MEM_UNKNOWN = 7
#: CUPTI's "no stream / no event" (CUPTI_SYNCHRONIZATION_INVALID_VALUE) as written to the tables.
INVALID_U32 = 0xFFFFFFFF

#: Columns of each table, in nsys's order (the subset nodecast writes).
COLUMNS: dict[str, tuple[str, ...]] = {
    "KERNEL": ("start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid",
               "demangledName", "shortName", "mangledName", "launchType", "cacheConfig", "registersPerThread",
               "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "staticSharedMemory",
               "dynamicSharedMemory", "localMemoryPerThread", "localMemoryTotal", "gridId",
               "sharedMemoryExecuted", "graphNodeId", "sharedMemoryLimitConfig"),
    "MEMCPY": ("start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid", "bytes",
               "copyKind", "deprecatedSrcId", "srcKind", "dstKind", "srcDeviceId", "srcContextId", "dstDeviceId",
               "dstContextId", "migrationCause", "graphNodeId", "virtualAddress"),
    "MEMSET": ("start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid", "value", "bytes",
               "graphNodeId", "memKind"),
    "SYNCHRONIZATION": ("start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid",
                        "syncType", "eventId"),
    "RUNTIME": ("start", "end", "eventClass", "globalTid", "correlationId", "nameId", "returnValue", "callchainId"),
    "GPU": ("vmId", "id", "name", "busLocation", "isDiscrete", "l2CacheSize", "totalMemory", "memoryBandwidth",
            "clockRate", "smCount", "pwGpuId", "uuid", "luid", "chipName", "cuDevice", "constantMemory", "maxIPC",
            "maxRegistersPerBlock", "maxShmemPerBlock", "maxShmemPerBlockOptin", "maxShmemPerSm",
            "maxRegistersPerSm", "threadsPerWarp", "asyncEngines", "maxWarpsPerSm", "maxBlocksPerSm",
            "maxThreadsPerBlock", "maxBlockDimX", "maxBlockDimY", "maxBlockDimZ", "maxGridDimX", "maxGridDimY",
            "maxGridDimZ", "computeMajor", "computeMinor", "smMajor", "smMinor"),
}
#: Columns that hold strings interned into StringIds (the row carries the string; the writer stores its id).
STRING_COLUMNS: dict[str, tuple[str, ...]] = {
    "KERNEL": ("demangledName", "shortName", "mangledName"),
    "RUNTIME": ("nameId",),
}


def nsys_mem_kind(cupti_kind: int | None) -> int:
    """CUPTI ``CUpti_ActivityMemoryKind`` -> nsys ``ENUM_CUDA_MEM_KIND`` (shifted by one; UNKNOWN last)."""
    if cupti_kind is None:
        return NSYS_MEM_UNKNOWN
    k = int(cupti_kind)
    return k - 1 if 1 <= k <= 7 else NSYS_MEM_UNKNOWN


def global_pid(pid: int) -> int:
    """nsys's serialized process id (pid in bits 24-47)."""
    return (pid & 0xFFFFFF) << 24


def global_tid(pid: int, tid: int) -> int:
    """nsys's serialized thread id (pid in bits 24-47, tid in bits 0-23)."""
    return global_pid(pid) | (tid & 0xFFFFFF)


@functools.lru_cache(maxsize=4096)
def short_name(demangled: str) -> str:
    """Base name of a kernel: ``void ns::foo<int>(float*, int)`` -> ``foo``; ``vecAdd`` -> ``vecAdd``."""
    text = demangled.strip()
    # Cut the parameter list: the last '(' at template depth 0.
    depth = 0
    cut = len(text)
    for i in range(len(text) - 1, -1, -1):
        c = text[i]
        if c in ">)":
            depth += 1
        elif c in "<(":
            depth -= 1
            if c == "(" and depth == 0:
                cut = i
                break
    head = text[:cut].strip()
    # Drop template arguments at the end.
    while head.endswith(">"):
        depth = 0
        for i in range(len(head) - 1, -1, -1):
            if head[i] == ">":
                depth += 1
            elif head[i] == "<":
                depth -= 1
                if depth == 0:
                    head = head[:i].rstrip()
                    break
        else:
            break
    # Last identifier after the return type and namespaces.
    m = re.search(r"([A-Za-z_~][\w~]*|operator\W+)$", head)
    return m.group(1) if m else (head or demangled)


def _getter(record: Any) -> Callable[..., Any]:
    """``get(name, default)`` for a record: dict.get, or getattr bound to the object (both C calls: this runs
    per field). Always pass the default: getattr without one raises on a missing field."""
    if type(record) is dict or isinstance(record, Mapping):
        return record.get
    return functools.partial(getattr, record)


@dataclass
class Converter:
    """Converts CUPTI records of one process to rows (see the module docstring).

    ``api_name(kind, cbid)`` names a runtime (``KIND_RUNTIME``) or driver
    (``KIND_DRIVER``) call; without it, names read ``runtime cbid 41``.
    ``demangle`` turns a mangled kernel name into the demangled one (the
    writer's parent process demangles in bulk; here it defaults to identity).
    """

    pid: int
    api_name: Callable[[int, int], str] | None = None
    demangle: Callable[[str], str] = field(default=lambda s: s)
    skipped: dict[int, int] = field(default_factory=dict)

    def convert(self, record: Any) -> dict[str, Any] | None:
        """The row of one record, or None for kinds nodecast does not write (counted in ``skipped``)."""
        kind = int(_getter(record)("kind", -1))
        handler = _HANDLERS.get(kind)
        if handler is None:
            self.skipped[kind] = self.skipped.get(kind, 0) + 1
            return None
        return handler(self, record)

    # -- one method per record kind -----------------------------------------------------
    def _kernel(self, r: Any) -> dict[str, Any] | None:
        g = _getter(r)
        mangled = str(g("name", "") or "")
        demangled = self.demangle(mangled) if mangled else ""
        return {
            "table": "KERNEL",
            "start": int(g("start", 0)), "end": int(g("end", 0)),
            "deviceId": int(g("device_id", 0)), "contextId": int(g("context_id", 0)),
            "streamId": int(g("stream_id", 0)), "correlationId": int(g("correlation_id", 0)),
            "globalPid": global_pid(self.pid),
            "demangledName": demangled, "shortName": short_name(demangled) if demangled else "",
            "mangledName": mangled,
            "launchType": g("launch_type", None), "cacheConfig": None,
            "registersPerThread": int(g("registers_per_thread", 0)),
            "gridX": int(g("grid_x", 0)), "gridY": int(g("grid_y", 0)), "gridZ": int(g("grid_z", 0)),
            "blockX": int(g("block_x", 0)), "blockY": int(g("block_y", 0)),
            "blockZ": int(g("block_z", 0)),
            "staticSharedMemory": int(g("static_shared_memory", 0)),
            "dynamicSharedMemory": int(g("dynamic_shared_memory", 0)),
            "localMemoryPerThread": int(g("local_memory_per_thread", 0)),
            "localMemoryTotal": int(g("local_memory_total", 0)),
            "gridId": int(g("grid_id", 0)),
            "sharedMemoryExecuted": g("shared_memory_executed", None),
            "graphNodeId": _nonzero(g("graph_node_id", None)),
            "sharedMemoryLimitConfig": g("shmem_limit_config", None),
        }

    def _memcpy(self, r: Any) -> dict[str, Any]:
        g = _getter(r)
        peer = int(g("kind", 0)) == KIND_MEMCPY2
        row = {
            "table": "MEMCPY",
            "start": int(g("start", 0)), "end": int(g("end", 0)),
            "deviceId": int(g("device_id", 0)), "contextId": int(g("context_id", 0)),
            "streamId": int(g("stream_id", 0)), "correlationId": int(g("correlation_id", 0)),
            "globalPid": global_pid(self.pid), "bytes": int(g("bytes", 0)),
            "copyKind": int(g("copy_kind", 0)), "deprecatedSrcId": None,
            "srcKind": nsys_mem_kind(g("src_kind", None)), "dstKind": nsys_mem_kind(g("dst_kind", None)),
            "srcDeviceId": None, "srcContextId": None, "dstDeviceId": None, "dstContextId": None,
            "migrationCause": None, "graphNodeId": _nonzero(g("graph_node_id", None)), "virtualAddress": None,
        }
        if peer:
            row.update({"srcDeviceId": g("src_device_id", None), "srcContextId": g("src_context_id", None),
                        "dstDeviceId": g("dst_device_id", None), "dstContextId": g("dst_context_id", None)})
        return row

    def _memset(self, r: Any) -> dict[str, Any]:
        g = _getter(r)
        return {
            "table": "MEMSET",
            "start": int(g("start", 0)), "end": int(g("end", 0)),
            "deviceId": int(g("device_id", 0)), "contextId": int(g("context_id", 0)),
            "streamId": int(g("stream_id", 0)), "correlationId": int(g("correlation_id", 0)),
            "globalPid": global_pid(self.pid), "value": int(g("value", 0)), "bytes": int(g("bytes", 0)),
            "graphNodeId": _nonzero(g("graph_node_id", None)), "memKind": nsys_mem_kind(g("memory_kind", None)),
        }

    def _sync(self, r: Any) -> dict[str, Any]:
        g = _getter(r)
        # CUPTI's synchronization record has a context but no device: the writer maps it (CONTEXT rows).
        return {
            "table": "SYNCHRONIZATION",
            "start": int(g("start", 0)), "end": int(g("end", 0)),
            "deviceId": None, "contextId": int(g("context_id", 0)),
            "streamId": int(g("stream_id", INVALID_U32)) & INVALID_U32,
            "correlationId": int(g("correlation_id", 0)), "globalPid": global_pid(self.pid),
            "syncType": int(g("type", 0)), "eventId": int(g("cuda_event_id", INVALID_U32)) & INVALID_U32,
        }

    def _api(self, r: Any) -> dict[str, Any]:
        g = _getter(r)
        kind = int(g("kind", KIND_RUNTIME))
        cbid = int(g("cbid", 0))
        if self.api_name is not None:
            name = self.api_name(kind, cbid)
        else:
            name = f"{'runtime' if kind == KIND_RUNTIME else 'driver'} cbid {cbid}"
        pid = int(g("process_id", self.pid) or self.pid)
        return {
            "table": "RUNTIME",
            "start": int(g("start", 0)), "end": int(g("end", 0)),
            "eventClass": 0 if kind == KIND_RUNTIME else 1,
            "globalTid": global_tid(pid, int(g("thread_id", 0))),
            "correlationId": int(g("correlation_id", 0)), "nameId": name,
            "returnValue": int(g("return_value", 0)), "callchainId": None,
        }

    def _um(self, r: Any) -> dict[str, Any] | None:
        g = _getter(r)
        counter = int(g("counter_kind", 0))
        copy_kind = UM_COPY_KIND.get(counter)
        if copy_kind is None:  # page faults, thrashing...: not transfers
            self.skipped[KIND_UNIFIED_MEMORY_COUNTER] = self.skipped.get(KIND_UNIFIED_MEMORY_COUNTER, 0) + 1
            return None
        src, dst = int(g("src_id", 0)), int(g("dst_id", 0))
        device = dst if copy_kind == 11 else src if copy_kind == 12 else dst
        return {
            "table": "MEMCPY",
            "start": int(g("start", 0)), "end": int(g("end", 0)),
            "deviceId": device, "contextId": 0, "streamId": int(g("stream_id", 0) or 0),
            "correlationId": 0, "globalPid": global_pid(int(g("process_id", self.pid) or self.pid)),
            "bytes": int(g("value", 0)), "copyKind": copy_kind, "deprecatedSrcId": None,
            "srcKind": NSYS_MEM_UNKNOWN, "dstKind": NSYS_MEM_UNKNOWN,
            "srcDeviceId": src if copy_kind == 13 else None, "srcContextId": None,
            "dstDeviceId": dst if copy_kind == 13 else None, "dstContextId": None,
            "migrationCause": int(g("flags_", g("flags", 0)) or 0), "graphNodeId": None,
            "virtualAddress": g("address", None),
        }

    def _device(self, r: Any) -> dict[str, Any]:
        g = _getter(r)
        dev = int(g("id", 0))
        bandwidth_kbps = g("global_memory_bandwidth", None)
        clock_khz = g("core_clock_rate", None)
        return {
            "table": "GPU",
            "vmId": 0, "id": dev, "name": str(g("name", "") or ""), "busLocation": None, "isDiscrete": None,
            "l2CacheSize": g("l2cache_size", None), "totalMemory": g("global_memory_size", None),
            "memoryBandwidth": None if bandwidth_kbps is None else int(bandwidth_kbps) * 1000,
            "clockRate": None if clock_khz is None else int(clock_khz) * 1000,
            "smCount": g("num_multiprocessors", None), "pwGpuId": None, "uuid": _uuid(g("uuid", None)),
            "luid": None, "chipName": None, "cuDevice": dev,
            "constantMemory": g("constant_memory_size", None), "maxIPC": g("max_ipc", None),
            "maxRegistersPerBlock": g("max_registers_per_block", None),
            "maxShmemPerBlock": g("max_shared_memory_per_block", None), "maxShmemPerBlockOptin": None,
            "maxShmemPerSm": g("max_shared_memory_per_multiprocessor", None),
            "maxRegistersPerSm": g("max_registers_per_multiprocessor", None),
            "threadsPerWarp": g("num_threads_per_warp", None), "asyncEngines": g("num_memcpy_engines", None),
            "maxWarpsPerSm": g("max_warps_per_multiprocessor", None),
            "maxBlocksPerSm": g("max_blocks_per_multiprocessor", None),
            "maxThreadsPerBlock": g("max_threads_per_block", None),
            "maxBlockDimX": g("max_block_dim_x", None), "maxBlockDimY": g("max_block_dim_y", None),
            "maxBlockDimZ": g("max_block_dim_z", None), "maxGridDimX": g("max_grid_dim_x", None),
            "maxGridDimY": g("max_grid_dim_y", None), "maxGridDimZ": g("max_grid_dim_z", None),
            "computeMajor": g("compute_capability_major", None), "computeMinor": g("compute_capability_minor", None),
            "smMajor": g("compute_capability_major", None), "smMinor": g("compute_capability_minor", None),
        }

    def _context(self, r: Any) -> dict[str, Any]:
        g = _getter(r)
        return {"table": "CONTEXT", "contextId": int(g("context_id", 0)), "deviceId": int(g("device_id", 0))}


def _nonzero(v: Any) -> Any:
    """CUPTI writes 0 for "no graph node"; nsys leaves the column NULL."""
    return None if v in (None, 0) else int(v)


def _uuid(v: Any) -> str | None:
    """A CUuuid (``.bytes``) or raw bytes as ``GPU-xxxxxxxx-xxxx-...``; None when absent."""
    if v is None:
        return None
    raw = getattr(v, "bytes", v)
    if isinstance(raw, str):
        return raw
    try:
        b = bytes(raw)
    except TypeError:
        return str(v)
    if len(b) != 16:
        return b.hex()
    h = b.hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_HANDLERS: dict[int, Callable[[Converter, Any], dict[str, Any] | None]] = {
    KIND_KERNEL: Converter._kernel,
    KIND_CONCURRENT_KERNEL: Converter._kernel,
    KIND_MEMCPY: Converter._memcpy,
    KIND_MEMCPY2: Converter._memcpy,
    KIND_MEMSET: Converter._memset,
    KIND_SYNCHRONIZATION: Converter._sync,
    KIND_RUNTIME: Converter._api,
    KIND_DRIVER: Converter._api,
    KIND_UNIFIED_MEMORY_COUNTER: Converter._um,
    KIND_DEVICE: Converter._device,
    KIND_CONTEXT: Converter._context,
}
