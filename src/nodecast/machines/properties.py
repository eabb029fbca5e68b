"""Find the data sheet of a GPU whose name says nothing, from what the trace records of it.

NVIDIA drivers name boards they do not know "Graphics Device"
(``nodecast.machines.names.is_generic_gpu_name``), so such a trace's GPU cannot
be found by name. Traces often record the device's compute capability, SM
count and memory size beside the name (``GpuProperties``); a sheet fits when
its target and SM count equal the recorded ones and its memory is within
``MEMORY_TOLERANCE`` of the recorded size. Exactly one fitting sheet is the
GPU; none or several is not decided here (the caller asks the user).
"""

from __future__ import annotations

from collections.abc import Sequence

from nodecast.machines.device_properties import GpuProperties
from nodecast.machines.names import SheetMatch
from nodecast.machines.parts import GpuSheet

#: Recorded memory / sheet memory accepted as the same board: drivers report binary-prefixed or ECC-reduced sizes
#: against the sheets' decimal GB (a 12 GB TITAN X reports 12.80e9 bytes, x1.067; a 16 GB T4 15.64e9, x0.978), while
#: boards that differ only in memory differ by x1.5 or more (V100 16 / 32 GB, A100 40 / 80 GB).
MEMORY_TOLERANCE = (0.9, 1.15)


def fitting_sheets(props: GpuProperties, sheets: Sequence[GpuSheet] | None = None) -> list[GpuSheet]:
    """The sheets whose target, SM count and memory agree with every property recorded (none recorded: none fit)."""
    if not props.known():
        return []
    if sheets is None:
        from nodecast.machines.sheets import loadable_sheets

        sheets, _ = loadable_sheets()
    low, high = MEMORY_TOLERANCE
    return [s for s in sheets
            if (props.target is None or s.target == props.target)
            and (props.sms is None or s.sms == props.sms)
            and (props.memory_bytes is None or low <= props.memory_bytes / s.memory_bytes <= high)]


def match_by_properties(props: GpuProperties,
                        sheets: Sequence[GpuSheet] | None = None) -> tuple[SheetMatch | None, list[GpuSheet]]:
    """The one sheet the recorded properties fit, as a SheetMatch whose description says why, and every fitting
    sheet (empty or several when the properties do not decide)."""
    fits = fitting_sheets(props, sheets)
    if len(fits) != 1:
        return None, fits
    detail = (f"a generic name drivers give boards they do not know; the only data sheet with the "
              f"{props.describe()} the trace records for it")
    return SheetMatch(fits[0], "properties", detail), fits
