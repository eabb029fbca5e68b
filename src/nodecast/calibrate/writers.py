"""Writers of calibration results: Google-Benchmark JSON and a Machine TOML file.

**Benchmark JSON** follows Google Benchmark's ``--benchmark_format=json``
(``src/json_reporter.cc``): a ``context`` object (date, host_name,
executable, num_cpus, mhz_per_cpu, cpu_scaling_enabled, caches, load_avg,
library_build_type, plus nodecast's keys) and a ``benchmarks`` list. Each
measured point gives:

* one ``run_type: "iteration"`` entry named like Comm|Scope's
  (``Comm_cudaMemcpyAsync_PinnedToGPU_flush/0/0/20``): ``iterations`` = the
  timed repetitions, ``real_time`` = their mean in ns (GB's manual-time
  convention: total time / iterations), ``cpu_time`` = the measuring
  thread's CPU time per iteration, counters ``bytes`` (the size of one
  copy), ``bytes_per_second`` (bytes moved per second at the mean; a duplex
  moves 2 x bytes), ``cuda_id``, ``numa_id`` as Comm|Scope;
* aggregate entries ``<name>_mean``, ``_median``, ``_stddev``, ``_cv``,
  ``_min``, ``_max`` (``run_type: "aggregate"``). Google Benchmark computes
  aggregates over repetitions; nodecast times every iteration separately,
  so it writes the spread over iterations as aggregates of ``repetitions``
  one-iteration repetitions. ``bytes_per_second`` of mean/median/min/max is
  the rate at that time (none for stddev and cv); ``cpu_time`` is only
  known as a mean over the loop, so it is 0 in every aggregate but mean.

A failed point is one entry with ``error_occurred: true`` and
``error_message``, as Google Benchmark writes a ``SkipWithError``.
Peak-FLOP points carry ``flop`` and ``flop_per_second`` instead of bytes.
No NaN or Infinity is ever written (they are not JSON).

**Machine TOML**: the base machine's tables (cpu, gpu, links, switches) as
parsed from its file, with a new name and description, and a ``[measured]``
table in the schema of ``nodecast.machines.schema.Measured``. The text is
produced by a small TOML writer (no third-party dependency) and validated
with the machine loader *before* it is renamed into place, so a file that
the loader would reject is never written.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import socket
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from nodecast import __version__
from nodecast.calibrate.derive import MeasuredValues
from nodecast.calibrate.host_copy import HostCopyResult
from nodecast.calibrate.plan import Plan
from nodecast.calibrate.run import PointResult
from nodecast.fileio import atomic_path
from nodecast.inputs import CONFIG_LIMIT_BYTES, read_input
from nodecast.machines.loader import machine_from_dict
from nodecast.machines.schema import Machine

#: Aggregates written per point, with their unit (Google Benchmark's ``aggregate_unit``).
AGGREGATES = (("mean", "time"), ("median", "time"), ("stddev", "time"), ("cv", "percentage"),
              ("min", "time"), ("max", "time"))


# -- Google Benchmark JSON -------------------------------------------------------------------


def _finite(x: float) -> float:
    return float(x) if math.isfinite(x) else 0.0


def _counters(r: PointResult, seconds: float | None) -> dict[str, float | int]:
    """Comm|Scope's counters; the rate is left out when ``seconds`` is None (stddev, cv)."""
    fam = r.case.family
    out: dict[str, float | int] = {}
    if fam.work == "flops":
        out["flop"] = _finite(r.work)
        if seconds is not None:
            out["flop_per_second"] = _finite(r.work / seconds) if seconds > 0 else 0.0
    else:
        out["bytes"] = int(r.size_bytes if fam.sized else r.work)
        if seconds is not None:
            out["bytes_per_second"] = _finite(r.work / seconds) if seconds > 0 else 0.0
    out["cuda_id"] = r.case.gpu
    if r.case.gpu2 is not None:
        out["peer_cuda_id"] = r.case.gpu2
    if r.case.numa is not None:
        out["numa_id"] = r.case.numa
    return out


def benchmark_entries(results: Sequence[PointResult]) -> list[dict[str, Any]]:
    """The ``benchmarks`` list for a run's results (see the module docstring)."""
    families: dict[str, int] = {}
    instances: dict[str, int] = {}
    out: list[dict[str, Any]] = []
    for r in results:
        prefix = r.case.prefix
        family_index = families.setdefault(prefix, len(families))
        instance = instances.get(prefix, 0)
        instances[prefix] = instance + 1
        head = {"name": r.name, "family_index": family_index, "per_family_instance_index": instance,
                "run_name": r.name}
        if not r.ok:
            out.append({**head, "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1,
                        "error_occurred": True, "error_message": r.error or "no timings", "iterations": 0,
                        "real_time": 0.0, "cpu_time": 0.0, "time_unit": "ns"})
            continue
        s = r.summary
        assert s is not None  # noqa: S101 - r.ok
        label = "; ".join(p for p in (r.case.family.timing + " timing", r.label, f"stopped by {r.stopped_by}") if p)
        cpu_ns = _finite(r.cpu_s * 1e9)
        out.append({**head, "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1,
                    "iterations": s.n, "real_time": s.mean_s * 1e9, "cpu_time": cpu_ns, "time_unit": "ns",
                    **_counters(r, s.mean_s), "label": label})
        values = {"mean": s.mean_s, "median": s.median_s, "stddev": s.stddev_s, "cv": s.cv,
                  "min": s.min_s, "max": s.max_s}
        for agg, unit in AGGREGATES:
            v = values[agg]
            is_rate = agg in ("mean", "median", "min", "max")
            out.append({**head, "name": f"{r.name}_{agg}", "run_type": "aggregate", "repetitions": s.n,
                        "threads": 1, "aggregate_name": agg, "aggregate_unit": unit, "iterations": 1,
                        "real_time": v if unit == "percentage" else v * 1e9,
                        "cpu_time": cpu_ns if agg == "mean" else 0.0,
                        "time_unit": "ns", **_counters(r, v if is_rate else None)})
    return out


def benchmark_context(extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Google Benchmark's ``context`` keys for this host, then ``extra`` (nodecast's own keys)."""
    try:
        load = list(os.getloadavg())
    except OSError:
        load = []
    ctx: dict[str, Any] = {
        "date": datetime.now().astimezone().isoformat(timespec="seconds"),
        "host_name": socket.gethostname(),
        "executable": "nodecast calibrate",
        "num_cpus": os.cpu_count() or 0,
        "mhz_per_cpu": _mhz(),
        "cpu_scaling_enabled": False,
        "caches": [],
        "load_avg": load,
        "library_build_type": "release",
        "library_version": f"nodecast {__version__}",
        "json_schema_version": 1,
    }
    ctx.update(extra or {})
    return ctx


def _mhz() -> int:
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return 0
    m = re.search(r"^cpu MHz\s*:\s*([\d.]+)", text, re.MULTILINE)
    return round(float(m.group(1))) if m else 0


def benchmark_document(results: Sequence[PointResult], plan: Plan, context: Mapping[str, Any]) -> dict[str, Any]:
    """The whole JSON document: context (with the plan's budget, waived cases and notes) and benchmarks."""
    b = plan.budget
    extra = {
        **context,
        "nodecast_budget": {"measured_s": b.measured_s, "min_reps": b.min_reps, "max_reps": b.max_reps,
                            "wall_s": b.wall_s, "warmup_reps": b.warmup_reps},
        "nodecast_waived": [{"family": w.family, "where": w.where, "reason": w.reason} for w in plan.waived],
        "nodecast_notes": list(plan.notes),
    }
    return {"context": benchmark_context(extra), "benchmarks": benchmark_entries(results)}


def dumps_json(doc: Mapping[str, Any]) -> str:
    """JSON text (no NaN/Infinity: a ValueError if one slipped through)."""
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def write_benchmark_json(path: str | os.PathLike[str], doc: Mapping[str, Any]) -> None:
    """Write the document atomically."""
    text = dumps_json(doc)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


# -- TOML ------------------------------------------------------------------------------------

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE_KEY.match(k) else json.dumps(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            msg = f"TOML value must be finite (got {v!r})"
            raise ValueError(msg)
        text = repr(v)  # shortest text that reads back as the same double
        if "e" not in text and (abs(v) >= 1e5 or 0 < abs(v) < 1e-4):
            mantissa, exp = f"{v:.17e}".split("e")
            for digits in range(1, 18):  # the shortest scientific form that round-trips
                candidate = f"{v:.{digits}e}"
                if float(candidate) == v:
                    mantissa, exp = candidate.split("e")
                    break
            text = f"{mantissa}e{int(exp)}"
        return text
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, datetime):
        return v.isoformat()
    msg = f"cannot write {type(v).__name__} to TOML"
    raise TypeError(msg)


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, Mapping) for x in v)


def toml_dumps(doc: Mapping[str, Any]) -> str:
    """TOML text of a nested mapping (tables, arrays of tables, scalars, arrays); round-trips through tomllib."""
    lines: list[str] = []
    _table(lines, doc, ())
    return "\n".join(lines).strip("\n") + "\n"


def _table(lines: list[str], table: Mapping[str, Any], path: tuple[str, ...]) -> None:
    for k, v in table.items():
        if not isinstance(v, Mapping) and not _is_table_array(v):
            lines.append(f"{_key(k)} = {_value(v)}")
    for k, v in table.items():
        sub = (*path, k)
        if isinstance(v, Mapping):
            only_tables = bool(v) and all(isinstance(x, Mapping) or _is_table_array(x) for x in v.values())
            if not only_tables:  # a table of tables needs no header of its own: [a.b] defines [a]
                lines.append("")
                lines.append(f"[{'.'.join(_key(p) for p in sub)}]")
            _table(lines, v, sub)
        elif _is_table_array(v):
            for item in v:
                lines.append("")
                lines.append(f"[[{'.'.join(_key(p) for p in sub)}]]")
                _table(lines, item, sub)


# -- Machine TOML ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Provenance:
    """Where measured values come from: ``origin``, date (ISO 8601), driver text, GPU name, facts."""

    origin: str
    date: str
    driver: str
    gpu_name: str
    facts: dict[str, str] = field(default_factory=dict)


def measured_table(values: MeasuredValues, prov: Provenance, host_copy: HostCopyResult | None = None) -> dict[str, Any]:
    """The ``[measured]`` table for a machine file (``nodecast.machines.schema.Measured``'s schema).

    ``host_copy`` (``nodecast.calibrate.host_copy``) adds ``host_copy_bandwidth_bps``
    and, in the facts, how it was measured.
    """
    facts = dict(prov.facts)
    if host_copy is not None:
        facts["host_copy"] = f"{prov.origin} on {prov.date}: {host_copy.method()}"
    if values.reference:
        facts["measured_on"] = values.reference
    t: dict[str, Any] = {"origin": prov.origin, "date": prov.date}
    if prov.driver:
        t["driver"] = prov.driver
    if prov.gpu_name:
        t["gpu_name"] = prov.gpu_name
    one_byte: dict[str, float] = {}
    bandwidth: dict[str, float] = {}
    curves: dict[str, Any] = {}
    for klass, cv in sorted(values.classes.items()):
        one_byte[klass] = cv.one_byte_s
        if cv.bandwidth_bps is not None:
            bandwidth[klass] = cv.bandwidth_bps
        curves[klass] = {"sizes_bytes": list(cv.sizes_bytes), "bandwidth_bps": list(cv.curve_bps)}
        what = f"{cv.source}: one_byte_s = median time of {cv.smallest_bytes} B"
        if cv.fit is not None:
            f = cv.fit
            what += (f"; bandwidth_bps = 1/G of T = L + n*G over {_size(f.sizes_bytes[0])}-{_size(f.sizes_bytes[-1])} "
                     f"({len(f.sizes_bytes)} sizes, L = {f.latency_s * 1e6:.3f} us, rms residual {100 * f.rms_rel:.2f}%)")
        else:
            what += f"; no bandwidth ({cv.note})"
        facts[f"source.{klass}"] = what
    if values.notes:
        facts["notes"] = " | ".join(values.notes)
    if one_byte:
        t["one_byte_s"] = one_byte
    if bandwidth:
        t["bandwidth_bps"] = bandwidth
    if curves:
        t["curves"] = curves
    if host_copy is not None:
        t["host_copy_bandwidth_bps"] = host_copy.bandwidth_bps
    if values.peak_flops or values.level_bandwidth_bps:
        g: dict[str, Any] = {"origin": f"{prov.origin}: fastest repetition of each kernel (measured maxima)"}
        if values.peak_flops:
            g["peak_flops"] = {p: {"fma": fma, "addmul": am} for p, (fma, am) in sorted(values.peak_flops.items())}
        if values.level_bandwidth_bps:
            g["level_bandwidth_bps"] = dict(sorted(values.level_bandwidth_bps.items()))
        t["gpu"] = g
    t["facts"] = facts
    return t


def with_host_copy(base: Machine, host_copy: HostCopyResult, prov: Provenance) -> dict[str, Any]:
    """``base``'s own ``[measured]`` table (kept whole) with the measured host copy rate added.

    For ``calibrate --host-only``, which measures nothing else: values the
    base file measured (a paper's GPU maxima...) stay. Without a base table,
    ``prov`` gives the origin, date and facts.
    """
    data = tomllib.loads(_base_text(base.path)) if base.path is not None else {}
    measured = data.get("measured")
    how = f"{prov.origin} on {prov.date}: {host_copy.method()}"
    if not isinstance(measured, dict):
        return {"origin": prov.origin, "date": prov.date, "host_copy_bandwidth_bps": host_copy.bandwidth_bps,
                "facts": {**prov.facts, "host_copy": how}}
    out = dict(measured)
    out["host_copy_bandwidth_bps"] = host_copy.bandwidth_bps
    out["facts"] = {**dict(measured.get("facts", {})), "host_copy": how}
    return out


def _size(n: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{int(n)} B"


def _base_text(path: str | os.PathLike[str]) -> str:
    """The base machine's file again, as the loader read it (a pipe: the copy it made; nodecast.inputs)."""
    return read_input(path, what="machine file", limit=CONFIG_LIMIT_BYTES).decode("utf-8")


def base_document(base: Machine) -> dict[str, Any]:
    """The base machine's file as parsed (its ``[measured]`` table dropped: ours replaces it)."""
    if base.path is None:
        msg = f"machine {base.name!r} has no file to copy"
        raise ValueError(msg)
    data = tomllib.loads(_base_text(base.path))
    data.pop("measured", None)
    return data


def machine_document(base: Machine, measured: Mapping[str, Any], *, name: str, description: str) -> dict[str, Any]:
    """A machine file: ``base``'s tables, ``name``/``description``, and ``measured``."""
    data = base_document(base)
    doc: dict[str, Any] = {"schema_version": data.pop("schema_version", 1), "name": name, "description": description}
    data.pop("name", None)
    data.pop("description", None)
    doc.update(data)
    doc["measured"] = dict(measured)
    return doc


def machine_header(base: Machine, prov: Provenance) -> str:
    """Comment lines at the top of a written machine file."""
    lines = [
        f"# Written by {prov.origin} on {prov.date} ({platform.node() or 'this host'}).",
        f"# cpu, gpu, links and switches are copied from the catalogue machine {base.name!r} ({base.path}):",
        "# see that file for the data-sheet source of each value. [measured] holds what was measured here;",
        "# measured values override data-sheet ones in nodecast's models.",
    ]
    return "\n".join(lines) + "\n"


def write_machine_toml(path: str | os.PathLike[str], doc: Mapping[str, Any], header: str = "") -> Machine:
    """Write ``doc`` as TOML atomically, after checking that the machine loader accepts it; returns the Machine."""
    text = header + toml_dumps(doc)
    machine = machine_from_dict(tomllib.loads(text), Path(path))
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return machine
