"""Compare nodecast's predictions with StarPU+SimGrid's own (``reference/attila.csv``).

The reference CSV (see ``../shared/data/starpu/reference/README.md``) lists,
per machine, application, precision, matrix size, scheduler and worker
configuration, the simulated time and GFlop/s that StarPU 1.4.9 over SimGrid
3.32 predicts from the same calibration files, plus the wall time it took,
whether StarPU warned that GPU memory was full (``gpu_memory_full_purge_warning``)
and the run's ``status``: rows StarPU itself did not complete (any status but
``ok``, usually with empty numbers) are skipped and counted, not compared.

``compare`` runs nodecast on every row, each on its own machine's platform and
kernel models, and returns one record per row with both GFlop/s, the relative
difference, and both sides' memory-full flags, so that one can check that the
performance drop appears at the same size. A row nodecast cannot simulate (a
kernel without a model on that machine) is a failed record with the reason;
the other rows still run. ``select_rows`` picks the rows to compare (machine,
size, application, schedulers) and ``compare_reference`` returns the whole
comparison as one result, ``ReferenceComparison``, the result model of
``nodecast simulate --compare-reference``.
"""

from __future__ import annotations

import csv
import io
import math
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nodecast.errors import InputError
from nodecast.inputs import read_input
from nodecast.headline import Number
from nodecast.models.history import KernelModels
from nodecast.engine.platform import Platform
from nodecast.runtime.simulation import RuntimeOptions
from nodecast.workflows.simulate_sweep import Case, run_cases

_NEEDED = ("app", "precision", "matrix_size", "block_size", "scheduler", "worker_config", "sim_gflops")

#: the status of a row StarPU completed; any other value marks a run to skip
OK = "ok"

#: a difference up to this (in %) counts as agreement in the summary line and the headline
WITHIN_PCT = 3.0

#: what a platform and kernel models are keyed by: the reference's ``machine`` column
Setups = Mapping[str, tuple[Platform, KernelModels]]


@dataclass(frozen=True)
class ReferenceRow:
    """One line of the reference CSV (``line``: its line number in the file, the header being line 1)."""

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
    line: int = 0

    @property
    def purge_warning(self) -> bool:
        return "purge" in self.notes or "memory_full" in self.notes


@dataclass(frozen=True)
class ReferenceTable:
    """A reference CSV: the rows StarPU completed and how many others were skipped.

    Attributes:
        path: the file read.
        rows: the rows whose status is ``ok`` (every row when the file has no ``status`` column).
        skipped: {status: number of rows} of the rows skipped (an empty status reads ``(empty)``).
    """

    path: Path
    rows: list[ReferenceRow]
    skipped: dict[str, int] = field(default_factory=dict)

    def skipped_line(self) -> str:
        """``skipped N rows whose status is not ok (crashed: 2, timeout: 1)``, or "" when none was skipped."""
        n = sum(self.skipped.values())
        if not n:
            return ""
        counts = ", ".join(f"{status}: {count}" for status, count in sorted(self.skipped.items()))
        return f"skipped {n} row{'s' if n > 1 else ''} whose status is not {OK} ({counts})"


def load_reference(path: str | Path) -> ReferenceTable:
    """Read a reference CSV.

    Rows whose ``status`` is not ``ok`` are counted in ``skipped`` and not
    parsed further. Raises InputError naming the file and line for a missing
    column, or an ``ok`` row with a malformed number or values that cannot be
    simulated.
    """
    path = Path(path)
    try:
        # Read whole, bounded, devices refused (nodecast.inputs): a line without end would be read forever.
        with io.StringIO(read_input(path, what="reference file").decode("utf-8"), newline="") as f:
            reader = csv.DictReader(f)
            fields = reader.fieldnames or []
            missing = [c for c in _NEEDED if c not in fields]
            if missing:
                raise InputError(f"missing column(s) {missing}", path=path)
            rows: list[ReferenceRow] = []
            skipped: Counter[str] = Counter()
            for lineno, r in enumerate(reader, 2):
                status = (r.get("status") or "").strip() if "status" in fields else OK
                if status != OK:
                    skipped[status or "(empty)"] += 1
                    continue
                rows.append(_row(r, lineno, path))
                _check_row(rows[-1], lineno, path)
    except OSError as exc:
        raise InputError(f"cannot read reference ({exc.strerror})", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=path, hint="Give StarPU+SimGrid's reference CSV") from None
    except csv.Error as exc:
        raise InputError(f"not a CSV file ({exc})", path=path, hint="Give StarPU+SimGrid's reference CSV") from None
    return ReferenceTable(path, rows, dict(skipped))


def _row(r: dict[str, str | None], lineno: int, path: Path) -> ReferenceRow:
    """One ``ok`` row; InputError naming the line and column of a malformed number."""

    def number(name: str, kind: type, *, optional: bool = False) -> Any:
        text = (r.get(name) or "").strip()
        if optional and not text:
            return math.nan
        try:
            value = kind(text)
        except (TypeError, ValueError):
            raise InputError(f"line {lineno}: {name}: malformed number {text!r}", path=path,
                             hint=f"Give a number, or a status other than {OK!r} for a run StarPU did not complete") from None
        if kind is float and not math.isfinite(value):
            raise InputError(f"line {lineno}: {name}: must be a finite number (got {text!r})", path=path)
        return value

    matrix_size = number("matrix_size", int)
    block_size = number("block_size", int)
    nblocks = number("nblocks", int) if (r.get("nblocks") or "").strip() else matrix_size // (block_size or 1)
    return ReferenceRow(
        machine=(r.get("machine") or "").strip(),
        app=r["app"] or "",
        precision=r["precision"] or "",
        matrix_size=matrix_size,
        nblocks=nblocks,
        block_size=block_size,
        scheduler=r["scheduler"] or "",
        worker_config=r["worker_config"] or "",
        sim_time_ms=number("sim_time_ms", float, optional=True),
        sim_gflops=number("sim_gflops", float),
        wall_s=number("wall_s", float, optional=True),
        notes=r.get("notes", "") or "",
        line=lineno,
    )


def _check_row(row: ReferenceRow, lineno: int, path: Path) -> None:
    """InputError naming the line when a row cannot be simulated as it stands."""
    from nodecast.runtime.schedulers import SCHEDULERS

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
    if row.sim_gflops <= 0:
        raise InputError(f"line {lineno}: sim_gflops must be > 0 (got {row.sim_gflops!r})", path=path)


def load_setups(
    rows: Iterable[ReferenceRow],
    load: Callable[[str], tuple[Platform, KernelModels]],
    path: str | Path | None = None,
    *,
    hint: str | None = None,
) -> dict[str, tuple[Platform, KernelModels]]:
    """The platform and kernel models of every machine the rows name, from ``load(machine)``, called once per machine.

    An InputError from ``load`` is re-raised naming the reference file
    (``path``), the first line of that machine and the machine, with ``hint``
    (what to do) when ``load``'s own error has none.
    """
    setups: dict[str, tuple[Platform, KernelModels]] = {}
    for row in rows:
        if row.machine in setups:
            continue
        try:
            setups[row.machine] = load(row.machine)
        except InputError as exc:
            raise InputError(f"line {row.line}: machine {row.machine!r}: {exc.message}", path=path, hint=None if exc.hint else hint) from None
    return setups


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
    setups: Setups,
    *,
    options: RuntimeOptions | None = None,
    progress: Callable[[ReferenceRow], None] | None = None,
    jobs: int | None = 1,
    address: str | None = None,
) -> list[dict[str, Any]]:
    """Simulate every row on its own machine and return records with both predictions side by side.

    Args:
        setups: {machine: (platform, kernel models)} for every ``machine`` the
            rows name (``load_setups`` builds it).
        jobs, address: run the rows in parallel (``nodecast.workflows.simulate_sweep.run_cases``);
            the records are the same either way, in the order of ``rows``.

    A row that cannot be simulated (an ``InputError`` during its simulation,
    e.g. a kernel without a model on that machine) gives a record whose
    ``error`` holds the reason and whose nodecast columns are None; the other
    rows still run. A row whose machine ``setups`` lacks raises InputError
    before any simulation.
    """
    base = options or RuntimeOptions()
    rows = list(rows)
    cases = []
    for row in rows:
        if row.machine not in setups:
            raise InputError(f"line {row.line}: no platform and models for machine {row.machine!r}",
                             hint=f"Machines given: {', '.join(setups) or 'none'}")
        if not (row.app.startswith("cholesky") or row.app.startswith("lu")):
            raise InputError(f"unknown application {row.app!r} in the reference", key="app")
        opt = replace(base, scheduler=row.scheduler, workers="gpus" if row.worker_config == "gpuonly" else "all")
        app = "cholesky" if row.app.startswith("cholesky") else "lu"
        cases.append(Case(opt, app, row.matrix_size, row.block_size, row.precision, machine=row.machine))
    on_done = None if progress is None else (lambda i: progress(rows[i]))
    results = run_cases(cases, None, None, machines=setups, jobs=jobs, address=address, progress=on_done, keep_going=True)
    return [_record(row, res) for row, res in zip(rows, results, strict=True)]


def _record(row: ReferenceRow, res: dict[str, Any]) -> dict[str, Any]:
    """One output record: the reference's figures beside nodecast's, or the reason nodecast could not run the row."""
    failed = "error" in res
    rec = {
        "machine": row.machine,
        "line": row.line,
        "app": row.app,
        "precision": row.precision,
        "matrix_size": row.matrix_size,
        "nblocks": row.nblocks,
        "scheduler": row.scheduler,
        "worker_config": row.worker_config,
        "reference_gflops": row.sim_gflops,
        "nodecast_gflops": None if failed else round(res["gflops"], 3),
        "diff_pct": None if failed else round(100.0 * (res["gflops"] / row.sim_gflops - 1.0), 2),
        "reference_memory_full": row.purge_warning,
        "nodecast_purges": None if failed else res["purges"],
        "nodecast_memory_full": None if failed else res["purges"] > 0,
        "reference_wall_s": row.wall_s,
        "nodecast_wall_s": None if failed else round(res["wall_s"], 3),
        "tasks": None if failed else res["tasks"],
        "likely_cause": "",
        "error": res["error"] if failed else "",
    }
    if not failed and abs(rec["diff_pct"]) > 3.0:
        rec["likely_cause"] = likely_cause(row, {"purges": res["purges"]})
    return rec


def failed_summary(records: Iterable[dict[str, Any]]) -> str:
    """``2 rows failed (lines 3, 5): <reason>; ...``, one reason per distinct error, or "" when none failed."""
    by_reason: dict[str, list[int]] = {}
    for r in records:
        if r["error"]:
            by_reason.setdefault(r["error"], []).append(r["line"])
    n = sum(len(v) for v in by_reason.values())
    if not n:
        return ""
    parts = [f"(line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}): {reason}" for reason, lines in by_reason.items()]
    return f"{n} row{'s' if n > 1 else ''} failed " + "; ".join(parts)


def select_rows(
    table: ReferenceTable,
    *,
    default_machine: str = "attila",
    machine: str | None = None,
    max_blocks: int | None = None,
    app: str | None = None,
    schedulers: Iterable[str] | None = None,
) -> list[ReferenceRow]:
    """The rows of ``table`` to compare: of ``machine`` only (when given), with at most ``max_blocks`` blocks per side,
    whose application starts with ``app``, run with one of ``schedulers``.

    A file without a ``machine`` column is one machine's: ``machine``, else
    ``default_machine``. InputError when ``machine`` has no row, or no row is
    left.
    """
    default = machine or default_machine
    rows = [r if r.machine else replace(r, machine=default) for r in table.rows]
    in_file = list(dict.fromkeys(r.machine for r in rows))
    if machine is not None:
        rows = [r for r in rows if r.machine == machine]
        if not rows:
            raise InputError(f"no reference row of machine {machine!r}", path=table.path, key="--starpu-machine",
                             hint=f"The file's rows are of: {', '.join(in_file) or 'no machine (every row skipped)'}")
    if max_blocks is not None:
        rows = [r for r in rows if r.nblocks <= max_blocks]
    if app is not None:
        rows = [r for r in rows if r.app.startswith(app)]
    if schedulers is not None:
        keep = {s.strip() for s in schedulers}
        rows = [r for r in rows if r.scheduler in keep]
    if not rows:
        raise InputError("no reference row left after filtering", path=table.path)
    return rows


@dataclass
class ReferenceComparison:
    """nodecast's predictions beside StarPU+SimGrid's for every compared row of a reference file.

    Attributes:
        path: the reference CSV.
        records: one dict per row, in file order (``compare``'s records:
            reference and nodecast GFlop/s, ``diff_pct`` = 100 (ours / ref - 1),
            both memory-full flags, wall times in s, ``error`` for a row that
            could not be simulated).
        skipped: {status: rows} of the rows StarPU did not complete.
        machines: the machines of the compared rows, in file order.
        wall_s: seconds the comparison took here (every simulation, in parallel or not).
    """

    path: Path
    records: list[dict[str, Any]]
    skipped: dict[str, int] = field(default_factory=dict)
    machines: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def ran(self) -> list[dict[str, Any]]:
        """The records nodecast simulated (no ``error``)."""
        return [r for r in self.records if not r["error"]]

    def within(self, pct: float = WITHIN_PCT) -> int:
        """Rows whose GFlop/s differ from the reference's by at most ``pct`` %."""
        return sum(1 for r in self.ran if abs(r["diff_pct"]) <= pct)

    def memory_flag_agrees(self) -> int:
        """Rows where nodecast and StarPU agree on whether GPU memory filled up."""
        return sum(1 for r in self.ran if r["reference_memory_full"] == r["nodecast_memory_full"])

    def simulated_s(self) -> float:
        """Seconds of simulation summed over the rows (each row's own wall time)."""
        return sum(r["nodecast_wall_s"] for r in self.ran)

    def failed_line(self) -> str:
        """``failed_summary`` of the records ("" when none failed)."""
        return failed_summary(self.records)

    def skipped_line(self) -> str:
        """``ReferenceTable.skipped_line`` of the rows StarPU did not complete ("" when none)."""
        return ReferenceTable(self.path, [], self.skipped).skipped_line()

    def table(self) -> Any:
        """The records as a DataFrame (the ``--csv`` columns)."""
        import pandas as pd

        return pd.DataFrame(self.records)

    def headline(self) -> list[Number]:
        """Share of rows within 3 %, the median |difference| (%), and the rows compared."""
        ran = self.ran
        if not ran:
            return [Number("rows simulated", 0, "count", note=f"of {len(self.records)}")]
        median = statistics.median(abs(r["diff_pct"]) for r in ran)
        return [
            Number(f"rows within {WITHIN_PCT:g} % of StarPU+SimGrid", self.within() / len(ran), "share",
                   note=f"{self.within()} of {len(ran)} rows"),
            Number("median |difference| in GFlop/s", median, "%", note="100 × |nodecast / reference − 1| per row"),
            Number("rows compared", len(ran), "count",
                   note=f"memory-full flag agrees on {self.memory_flag_agrees()}; {len(self.records) - len(ran)} failed"),
        ]

    def first_group(self) -> tuple[str, list[dict[str, Any]]]:
        """The rows of the first compared (machine, application, precision, worker configuration), and a title for them.

        The ``--plot`` figure draws these: GFlop/s against size, one line per scheduler, both predictions.
        """
        ran = self.ran
        first = ran[0]
        same = ("machine", "app", "precision", "worker_config")
        sel = [r for r in ran if all(r[k] == first[k] for k in same)]
        title = f"{first['app']} ({first['precision']}), {first['worker_config']}"
        if len(self.machines) > 1:
            title += f" on {first['machine']}"
        return title, sel


def compare_reference(
    table: ReferenceTable,
    rows: Iterable[ReferenceRow],
    setups: Setups,
    *,
    options: RuntimeOptions | None = None,
    progress: Callable[[ReferenceRow], None] | None = None,
    jobs: int | None = 1,
    address: str | None = None,
) -> ReferenceComparison:
    """``compare`` the ``rows`` of ``table`` and return the whole comparison.

    InputError (naming the file) when no row could be simulated, with the
    reasons.
    """
    rows = list(rows)
    t0 = time.perf_counter()
    records = compare(rows, setups, options=options, progress=progress, jobs=jobs, address=address)
    wall = time.perf_counter() - t0
    if not any(not r["error"] for r in records):
        raise InputError(f"no row could be simulated: {failed_summary(records)}", path=table.path)
    machines = list(dict.fromkeys(r.machine for r in rows))
    return ReferenceComparison(table.path, records, dict(table.skipped), machines, wall)
