"""Thin layer over NVIDIA's cupti-python: enable activity tracing, convert and hand over buffers.

Written against cupti-python 13.4 (``from cupti import cupti``):
``cupti.activity_register_callbacks(buffer_requested, buffer_completed)``
where ``buffer_requested()`` returns ``(buffer size in bytes, max records
(0: no limit))`` and ``buffer_completed(activities)`` gets a list of record
objects (``ActivityKernel9``, ``ActivityMemcpy6``, ``ActivityAPI``...);
``cupti.activity_enable(kind)``; ``cupti.activity_flush_all(1)`` (forced);
``cupti.get_callback_name(domain, cbid)``;
``cupti.activity_configure_unified_memory_counter(configs.ptr, count)``.
Record objects are views into CUPTI's buffer, valid only inside the
callback: each is converted to a row (``activities.Converter``) there.

NOTE: not yet run with a GPU (the machine it was written on had no NVIDIA
driver); see docs/calibrate.md.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from nodecast.errors import GPUUnavailableError
from nodecast.record.activities import (
    ENABLED_KINDS,
    KIND_CONCURRENT_KERNEL,
    KIND_MEMCPY,
    KIND_MEMSET,
    KIND_RUNTIME,
    KIND_SYNCHRONIZATION,
    KIND_UNIFIED_MEMORY_COUNTER,
    UM_BYTES_DTOD,
    UM_BYTES_DTOH,
    UM_BYTES_HTOD,
    Converter,
)

INSTALL_HINT = "Install the GPU extra: pip install '.[gpu]' in the nodecast checkout (NVIDIA's cuda-python and cupti-python)"
#: Activity kinds without which a trace is useless: refusing one ends the recording.
REQUIRED_KINDS = (KIND_CONCURRENT_KERNEL, KIND_MEMCPY, KIND_MEMSET, KIND_SYNCHRONIZATION, KIND_RUNTIME)
#: Bytes of each activity buffer handed to CUPTI.
BUFFER_BYTES = 8 << 20


def load_cupti() -> ModuleType:
    """``cupti.cupti`` from cupti-python; GPUUnavailableError when it is not installed."""
    try:
        from cupti import cupti
    except ImportError:
        raise GPUUnavailableError("cupti-python is not installed", hint=INSTALL_HINT) from None
    return cupti


def cupti_version() -> str:
    """cupti-python's version ('unknown' when not installed)."""
    try:
        from importlib.metadata import version

        return version("cupti-python")
    except Exception:  # noqa: BLE001
        return "unknown"


class Tracer:
    """CUPTI activity tracing of this process: rows go to ``sink`` (called from CUPTI's thread).

    ``start`` raises GPUUnavailableError when CUPTI cannot trace (no driver,
    no device, another profiler already attached).
    """

    def __init__(self, converter: Converter, sink: Callable[[list[dict[str, Any]]], None]) -> None:
        self.cupti = load_cupti()
        self.converter = converter
        self.sink = sink
        self.notes: list[str] = []
        self.kernel_names: set[str] = set()
        #: Records whose conversion failed.
        self.failed = 0
        self._names: dict[tuple[int, int], str] = {}
        #: Held while rows are written; the injector takes it for its own lines too.
        self.lock = threading.Lock()
        self._enabled: list[int] = []
        converter.api_name = self.api_name

    def api_name(self, kind: int, cbid: int) -> str:
        """Name of a runtime or driver API call (cached)."""
        key = (kind, cbid)
        name = self._names.get(key)
        if name is None:
            c = self.cupti
            domain = c.CallbackDomain.RUNTIME_API if kind == KIND_RUNTIME else c.CallbackDomain.DRIVER_API
            try:
                raw = c.get_callback_name(domain, cbid)
                name = raw.decode() if isinstance(raw, bytes) else str(raw)
            except Exception:  # noqa: BLE001 - a name is informative; keep the cbid
                name = f"{'runtime' if kind == KIND_RUNTIME else 'driver'} cbid {cbid}"
            self._names[key] = name
        return name

    def _requested(self) -> tuple[int, int]:
        return BUFFER_BYTES, 0

    def _completed(self, activities: list[Any]) -> None:
        rows = []
        convert = self.converter.convert
        for record in activities:
            try:
                row = convert(record)
            except Exception as exc:  # noqa: BLE001 - one odd record must not lose the buffer (nor kill CUPTI's thread)
                self.failed += 1
                if self.failed == 1:
                    self.notes.append(f"records that could not be converted, first: {type(exc).__name__}: {exc}")
                continue
            if row is not None:
                rows.append(row)
                if row["table"] == "KERNEL" and row["mangledName"]:
                    self.kernel_names.add(row["mangledName"])
        if rows:
            with self.lock:
                self.sink(rows)

    def start(self) -> None:
        """Register the buffer callbacks and enable the activity kinds.

        Kernels, copies, memsets, synchronizations and runtime calls are
        required (GPUUnavailableError when CUPTI refuses them); driver calls,
        peer copies, device/context records and unified-memory counters are
        optional (a note says what is missing).
        """
        c = self.cupti
        try:
            try:
                c.set_thread_id_type(c.ActivityThreadIdType.SYSTEM)  # OS thread ids, as nsys's globalTid
            except Exception as exc:  # noqa: BLE001 - optional
                self.notes.append(f"thread ids are CUPTI's default ({exc})")
            c.activity_register_callbacks(self._requested, self._completed)
            for kind in ENABLED_KINDS:
                if kind == KIND_UNIFIED_MEMORY_COUNTER and not self._configure_um():
                    continue
                try:
                    c.activity_enable(kind)
                except Exception as exc:
                    if kind in REQUIRED_KINDS:
                        raise
                    self.notes.append(f"CUPTI activity kind {kind} not traced ({type(exc).__name__}: {exc})")
                    continue
                self._enabled.append(kind)
        except GPUUnavailableError:
            raise
        except Exception as exc:  # noqa: BLE001 - cuptiError, NotSupportedError (no driver)...
            raise GPUUnavailableError(f"CUPTI cannot trace this process ({type(exc).__name__}: {exc})",
                                      hint="nodecast record needs an NVIDIA GPU with its driver (check nvidia-smi)") from None

    def _configure_um(self) -> bool:
        """Unified-memory transfer counters (HtoD, DtoH, DtoD bytes) for every device; False when unsupported."""
        c = self.cupti
        try:
            configs = c.ActivityUnifiedMemoryCounterConfig(3)
            for i, kind in enumerate((UM_BYTES_HTOD, UM_BYTES_DTOH, UM_BYTES_DTOD)):
                configs[i].scope = c.ActivityUnifiedMemoryCounterScope.PROCESS_ALL_DEVICES
                configs[i].kind = kind
                configs[i].device_id = 0
                configs[i].enable = 1
            c.activity_configure_unified_memory_counter(configs.ptr, 3)
        except Exception as exc:  # noqa: BLE001 - no UM counters on this platform (MIG, WSL, vGPU...)
            self.notes.append(f"unified-memory migrations not traced ({type(exc).__name__}: {exc})")
            return False
        return True

    def stop(self) -> None:
        """Flush every buffer (forced) and disable the activities."""
        c = self.cupti
        try:
            c.activity_flush_all(1)
        finally:
            for kind in self._enabled:
                try:
                    c.activity_disable(kind)
                except Exception:  # noqa: BLE001, S112 - shutting down
                    continue
            self._enabled.clear()
