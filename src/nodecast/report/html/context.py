"""What every report page says about its run: the machines with the source of each value, and the run's inputs.

``machine_inputs(machine)`` lists the values the models read from a
``Machine`` (GPU, its memory and peaks, the host link, the host), each with
where it came from (``Machine.provenance``: the machine file, a data sheet,
a host file, a calibration), as ``nodecast machines show`` prints them.
``run_inputs`` adds the trace, the models, the nodecast version and the
command line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pandas as pd

from nodecast.report.html.blocks import MachineInputs, RunInputs

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine


def _source(machine: Machine, key: str, default: str = "derived") -> str:
    where = machine.provenance.get(key, default)
    if where.startswith("machine file") and machine.path is not None:
        where = f"machine file {machine.path.name}" + where[len("machine file"):]
    return where


def machine_inputs(machine: Machine) -> MachineInputs:
    """The values of ``machine`` the models use, one row each: field, value (SI), unit, source."""
    from nodecast.machines.compare import machine_summary

    s = machine_summary(machine)
    cpu, gpu, node = s["cpu"], s["gpu"], s["node"]
    rows: list[tuple[str, object, str, str]] = [
        ("GPU", gpu["model"], "", _source(machine, "gpu.model")),
        ("GPUs", gpu["count"], "count", _source(machine, "gpu.count")),
        ("SMs per GPU", gpu["sms"], "count", _source(machine, "gpu.sms")),
        ("GPU clock", gpu["clock_hz"] * 1e-9, "GHz", _source(machine, "gpu.clock_hz")),
        ("GPU memory per GPU", gpu["memory_bytes"], "B", _source(machine, "gpu.memory_bytes")),
    ]
    for level, lv in gpu["levels"].items():
        if lv["bandwidth_bps"] is not None:
            rows.append((f"GPU {level} bandwidth", lv["bandwidth_bps"], "B/s",
                         _source(machine, f"gpu.levels.{level}.bandwidth_bps")))
        if lv["size_bytes"] is not None:
            rows.append((f"GPU {level} size", lv["size_bytes"], "B", _source(machine, f"gpu.levels.{level}.size_bytes")))
    for precision, p in gpu["peak_flops"].items():
        rows.append((f"GPU {precision} peak (FMA)", p["fma"], "flop/s", _source(machine, f"gpu.peak_flops.{precision}")))
    link = s["host_link"]
    rows.append((f"host link ({link['label']}), raw rate per direction", link["raw_rate_bps"], "B/s",
                 "derived: link generation and width (machines show lists the links)"))
    rows += [
        ("CPU", cpu["model"], "", _source(machine, "cpu.model")),
        ("CPU sockets", cpu["sockets"], "count", _source(machine, "cpu.sockets")),
        ("host memory bandwidth per socket", cpu["memory_bandwidth_bps"], "B/s",
         _source(machine, "cpu.memory_bandwidth_bps")),
        ("host memory bandwidth per node", node["cpu_memory_bandwidth_bps"], "B/s", "derived: sockets × per socket"),
    ]
    if cpu.get("copy_bandwidth_bps") is not None:
        rows.append(("single-thread host copy", cpu["copy_bandwidth_bps"], "B/s", cpu["copy_bandwidth_source"]))
    m = s["measured"]
    if m is not None:
        origin = f"measured: {m['origin']}" + (f" ({m['date']})" if m["date"] else "")
        rows += [(f"1-byte cost {k}", v, "s", origin) for k, v in m["one_byte_s"].items()]
        rows += [(f"bandwidth {k}", v, "B/s", origin) for k, v in m["bandwidth_bps"].items()]
        rows += [(f"GPU {k} bandwidth (measured)", v, "B/s", origin) for k, v in m["gpu_level_bandwidth_bps"].items()]
    values = pd.DataFrame(rows, columns=["field", "value", "unit", "source"])
    where = f" ({machine.path})" if machine.path is not None else ""
    return MachineInputs(machine.name, values, f"{machine.description}{where}".strip())


def run_inputs(trace: str, command: Sequence[str] | str | None, machines: Sequence[Machine] = (),
               models: Mapping[str, str] | None = None, trace_summary: str = "") -> RunInputs:
    """The run's inputs block: ``command`` None says the report was made from Python."""
    from nodecast import __version__

    return RunInputs(trace=trace, version=__version__,
                     command=command if command is not None else "(made from Python, not the command line)",
                     trace_summary=trace_summary,
                     machines=[machine_inputs(m) for m in {m.name: m for m in machines}.values()],
                     models=dict(models or {}))
