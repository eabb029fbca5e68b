"""What a trace records of a GPU besides its name: compute capability, SM count, memory size.

Profilers copy the device's properties beside its name (CUPTI's device record
in nvprof files: ``computeCapabilityMajor/Minor``, ``numMultiprocessors``,
``globalMemorySize``; the PyTorch profiler's ``deviceProperties``). Readers
keep them in ``TraceMeta.gpu_properties`` so that a GPU whose name says nothing
("Graphics Device", the name NVIDIA drivers give boards they do not know) can
still be told apart (``nodecast.machines.properties``). The record is defined
here, in ``nodecast.machines``, below the trace readers that fill it in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GpuProperties:
    """A device's recorded properties; None where the trace does not record one.

    ``target`` is the instruction-set target as the data sheets name it
    (``sm_52`` for compute capability 5.2); ``memory_bytes`` the device memory
    the driver reports, in bytes (a little above the decimal GB data sheets give,
    or below it with ECC on).
    """

    target: str | None = None
    sms: int | None = None
    memory_bytes: int | None = None

    def known(self) -> bool:
        """Whether anything is recorded."""
        return any(v is not None for v in (self.target, self.sms, self.memory_bytes))

    def describe(self) -> str:
        """``compute capability 5.2, 24 SMs, 12.8 GB`` (what is recorded, in that order)."""
        parts = []
        if self.target and self.target.startswith("sm_") and self.target[3:].isdigit():
            digits = self.target[3:]
            parts.append(f"compute capability {digits[:-1]}.{digits[-1]}")
        elif self.target:
            parts.append(f"target {self.target}")
        if self.sms is not None:
            parts.append(f"{self.sms} SMs")
        if self.memory_bytes is not None:
            parts.append(f"{self.memory_bytes / 1e9:.1f} GB")
        return ", ".join(parts)


def _positive_int(value: Any) -> int | None:
    """A recorded count as an int; None for anything else (NULL, text, 0 or negative: not recorded)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    number = int(value)
    return number if number > 0 and number == value else None


def nvidia_properties(major: Any, minor: Any, sms: Any, memory_bytes: Any) -> GpuProperties:
    """Properties from a compute capability's major and minor numbers, an SM count and a memory size in bytes;
    values that are missing or not positive integers are left unknown."""
    maj, mnr = _positive_int(major), _positive_int(minor) if minor != 0 else 0
    target = f"sm_{maj}{mnr}" if maj is not None and mnr is not None and mnr < 10 else None
    return GpuProperties(target=target, sms=_positive_int(sms), memory_bytes=_positive_int(memory_bytes))
