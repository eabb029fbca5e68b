"""Compare nodecast's predictions with StarPU+SimGrid's own (``reference/attila.csv``).

The reference CSV (see ``../shared/data/starpu/reference/README.md``) lists,
per application, precision, matrix size, scheduler and worker configuration,
the simulated time and GFlop/s that StarPU 1.4.9 over SimGrid 3.32 predicts
from the same calibration files, plus the wall time it took and whether
StarPU warned that GPU memory was full (``gpu_memory_full_purge_warning``).

``compare`` runs nodecast on every row and returns one record per row with
both GFlop/s, the relative difference, and both sides' memory-full flags, so
that one can check that the performance drop appears at the same size.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nodecast.errors import InputError
from nodecast.sim.apps import cholesky, lu
from nodecast.sim.perfmodel import KernelModels
from nodecast.sim.platform import Platform
from nodecast.sim.runtime import RuntimeOptions, Simulation

_NEEDED = ("app", "precision", "matrix_size", "block_size", "scheduler", "worker_config", "sim_gflops")


@dataclass(frozen=True)
class ReferenceRow:
    """One line of the reference CSV."""

    machine: str
    app: str
    precision: str
    matrix_size: int
    nblocks: int
    block_size: int
    scheduler: str
    worker_config: str
    sim_time_ms: float
    sim_gflops: float
    wall_s: float
    notes: str

    @property
    def purge_warning(self) -> bool:
        return "purge" in self.notes or "memory_full" in self.notes


def load_reference(path: str | Path) -> list[ReferenceRow]:
    """Read a reference CSV. Raises InputError for a missing column or a malformed number."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in _NEEDED if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError(f"missing column(s) {missing}", path=path)
            rows = []
            for lineno, r in enumerate(reader, 2):
                try:
                    rows.append(
                        ReferenceRow(
                            machine=r.get("machine", ""),
                            app=r["app"],
                            precision=r["precision"],
                            matrix_size=int(r["matrix_size"]),
                            nblocks=int(r.get("nblocks") or int(r["matrix_size"]) // int(r["block_size"])),
                            block_size=int(r["block_size"]),
                            scheduler=r["scheduler"],
                            worker_config=r["worker_config"],
                            sim_time_ms=float(r.get("sim_time_ms") or "nan"),
                            sim_gflops=float(r["sim_gflops"]),
                            wall_s=float(r.get("wall_s") or "nan"),
                            notes=r.get("notes", "") or "",
                        )
                    )
                except (TypeError, ValueError):
                    raise InputError(f"line {lineno}: malformed number", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read reference ({exc.strerror})", path=path) from None
    return rows


def graph_for(row: ReferenceRow):
    """The task graph a reference row ran (Cholesky for ``cholesky*``, LU for ``lu*``)."""
    if row.app.startswith("cholesky"):
        return cholesky(row.matrix_size, row.block_size, precision=row.precision)
    if row.app.startswith("lu"):
        return lu(row.matrix_size, row.block_size, precision=row.precision)
    raise InputError(f"unknown application {row.app!r} in the reference", key="app")


def likely_cause(row: ReferenceRow, ours: dict[str, Any]) -> str:
    """A short tag for where a difference most plausibly comes from (see the fidelity report)."""
    tags = []
    if row.purge_warning or ours["purges"]:
        tags.append("memory-full regime")
    if row.nblocks <= 10:
        tags.append("small graph (critical path, start-up)")
    if row.scheduler in ("ws", "lws"):
        tags.append("stealing order")
    if row.scheduler == "eager" and row.worker_config == "default":
        tags.append("eager with slow CPU workers")
    if row.worker_config == "default":
        tags.append("CPU workers")
    return "; ".join(tags) or "scheduling decisions"


def compare(
    rows: Iterable[ReferenceRow],
    platform: Platform,
    models: KernelModels,
    *,
    options: RuntimeOptions | None = None,
    progress: Callable[[ReferenceRow], None] | None = None,
) -> list[dict[str, Any]]:
    """Simulate every row and return records with both predictions side by side."""
    base = options or RuntimeOptions()
    out = []
    for row in rows:
        opt = replace(base, scheduler=row.scheduler, workers="gpus" if row.worker_config == "gpuonly" else "all")
        graph = graph_for(row)
        t0 = time.perf_counter()
        res = Simulation(graph, platform, models, opt).run()
        wall = time.perf_counter() - t0
        rec = {
            "app": row.app,
            "precision": row.precision,
            "matrix_size": row.matrix_size,
            "nblocks": row.nblocks,
            "scheduler": row.scheduler,
            "worker_config": row.worker_config,
            "reference_gflops": row.sim_gflops,
            "nodecast_gflops": round(res.gflops, 3),
            "diff_pct": round(100.0 * (res.gflops / row.sim_gflops - 1.0), 2),
            "reference_memory_full": row.purge_warning,
            "nodecast_purges": res.purges,
            "nodecast_memory_full": res.purges > 0,
            "reference_wall_s": row.wall_s,
            "nodecast_wall_s": round(wall, 3),
            "tasks": res.n_tasks,
        }
        rec["purges"] = res.purges
        rec["likely_cause"] = likely_cause(row, rec) if abs(rec["diff_pct"]) > 3.0 else ""
        del rec["purges"]
        out.append(rec)
        if progress is not None:
            progress(row)
    return out
