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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nodecast.errors import InputError
from nodecast.sim.perfmodel import KernelModels
from nodecast.sim.platform import Platform
from nodecast.sim.runtime import RuntimeOptions
from nodecast.sim.sweep import Case, run_cases

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
                            nblocks=int(r.get("nblocks") or int(r["matrix_size"]) // (int(r["block_size"]) or 1)),
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
                _check_row(rows[-1], lineno, path)
    except OSError as exc:
        raise InputError(f"cannot read reference ({exc.strerror})", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=path, hint="Give StarPU+SimGrid's reference CSV") from None
    return rows


def _check_row(row: ReferenceRow, lineno: int, path: Path) -> None:
    """InputError naming the line when a row cannot be simulated as it stands."""
    from nodecast.sim.schedulers import SCHEDULERS

    if not row.app.startswith(("cholesky", "lu")):
        raise InputError(f"line {lineno}: unknown application {row.app!r}", path=path, hint="nodecast simulates cholesky* and lu* rows")
    if row.precision not in ("single", "double"):
        raise InputError(f"line {lineno}: precision must be single or double (got {row.precision!r})", path=path)
    if row.matrix_size <= 0 or row.block_size <= 0:
        raise InputError(f"line {lineno}: matrix_size and block_size must be > 0 (got {row.matrix_size}, {row.block_size})", path=path)
    if row.matrix_size % row.block_size:
        raise InputError(f"line {lineno}: block_size {row.block_size} does not divide matrix_size {row.matrix_size}", path=path)
    if row.scheduler not in SCHEDULERS:
        raise InputError(f"line {lineno}: unknown scheduler {row.scheduler!r}", path=path, hint=f"Known: {', '.join(SCHEDULERS)}")


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
    jobs: int | None = 1,
    address: str | None = None,
) -> list[dict[str, Any]]:
    """Simulate every row and return records with both predictions side by side.

    ``jobs`` and ``address`` run the rows in parallel (``nodecast.sim.sweep.run_cases``);
    the records are the same either way, in the order of ``rows``.
    """
    base = options or RuntimeOptions()
    rows = list(rows)
    cases = []
    for row in rows:
        if not (row.app.startswith("cholesky") or row.app.startswith("lu")):
            raise InputError(f"unknown application {row.app!r} in the reference", key="app")
        opt = replace(base, scheduler=row.scheduler, workers="gpus" if row.worker_config == "gpuonly" else "all")
        app = "cholesky" if row.app.startswith("cholesky") else "lu"
        cases.append(Case(opt, app, row.matrix_size, row.block_size, row.precision))
    on_done = None if progress is None else (lambda i: progress(rows[i]))
    results = run_cases(cases, platform, models, jobs=jobs, address=address, progress=on_done)
    out = []
    for row, res in zip(rows, results, strict=True):
        rec = {
            "app": row.app,
            "precision": row.precision,
            "matrix_size": row.matrix_size,
            "nblocks": row.nblocks,
            "scheduler": row.scheduler,
            "worker_config": row.worker_config,
            "reference_gflops": row.sim_gflops,
            "nodecast_gflops": round(res["gflops"], 3),
            "diff_pct": round(100.0 * (res["gflops"] / row.sim_gflops - 1.0), 2),
            "reference_memory_full": row.purge_warning,
            "nodecast_purges": res["purges"],
            "nodecast_memory_full": res["purges"] > 0,
            "reference_wall_s": row.wall_s,
            "nodecast_wall_s": round(res["wall_s"], 3),
            "tasks": res["tasks"],
        }
        rec["purges"] = res["purges"]
        rec["likely_cause"] = likely_cause(row, rec) if abs(rec["diff_pct"]) > 3.0 else ""
        del rec["purges"]
        out.append(rec)
    return out
