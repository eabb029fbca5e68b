"""``nodecast simulate --html``: the page of one run, of a sweep, and of the comparison with StarPU+SimGrid.

Each page leads with makespan and GFlop/s (the run's, the sweep's best run's)
or, for the comparison, the share of rows within 3 % of StarPU+SimGrid; the
numbers are the ones ``--json`` writes (``headline()`` of the result). Then
the run's inputs (the platform's links and memories with the file they came
from, the nodecast machine with the source of each value when the platform
was built from one, the kernel models, the command line), sortable tables,
figures (the schedule as a zoomable Gantt chart; GFlop/s and makespan
against matrix size; nodecast against the reference and the distribution of
differences per scheduler) and what the simulation assumed (its notes).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from nodecast.report import html as rh
from nodecast.report.html import render
from nodecast.runtime.outputs import SimResult
from nodecast.workflows.simulate_reference import WITHIN_PCT, ReferenceComparison
from nodecast.workflows.simulate_sweep import SweepResult

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine


def _machines(machine: Machine | None) -> list[rh.MachineInputs]:
    return [rh.machine_inputs(machine)] if machine is not None else []


def _platform_inputs(result: SimResult) -> rh.MachineInputs:
    """The simulated platform as the run used it: GPU memories and every link's bandwidth and latency."""
    src = result.inputs.get("platform_source", result.platform)
    where = f"platform {Path(src).name}" if src else "platform"
    rows: list[tuple[str, object, str, str]] = [
        (f"{n.name} memory", n.capacity_bytes, "B", f"{where} (after the what-if options)") for n in result.nodes
    ]
    latency = result.inputs.get("link_latency_s") or [None] * len(result.links)
    for link, lat in zip(result.links, latency, strict=True):
        rows.append((f"link {link.name} bandwidth", link.bandwidth_bps, "B/s", where))
        if lat is not None:
            rows.append((f"link {link.name} latency", lat, "s", where))
    gpus = ", ".join(dict.fromkeys(result.inputs.get("gpu_models", [])))
    desc = f"{src}" + (f"; GPUs: {gpus}" if gpus else "")
    if "cpus" in result.inputs:
        desc += f"; {result.inputs['cpus']} CPU cores"
    values = pd.DataFrame(rows, columns=["field", "value", "unit", "source"])
    return rh.MachineInputs(f"{result.platform} (simulated platform)", values, desc)


def _options_table(options: dict[str, Any]) -> pd.DataFrame:
    """The runtime options as text, with Table 2's overheads in seconds (``pinned_alloc_s_per_byte`` in s per byte)."""
    rows = [(k, str(v)) for k, v in options.items() if k != "overheads"]
    for k, v in (options.get("overheads") or {}).items():
        shown = rh.fmt(v, "s") if k.endswith("_s") else f"{rh.fmt(v * 2**30, 's')} per GiB" if k.endswith("_per_byte") else str(v)
        rows.append((f"overhead {k}", shown))
    return pd.DataFrame(rows, columns=["option", "value"])


def _assumptions(lead: str, lines: list[str]) -> rh.Block:
    """The page's last section for a simulation: nothing is taken from a trace, so only what the run assumed."""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return rh.Block(f'<p class="kept-none">{html.escape(lead)}</p>\n<h3>Assumptions</h3>\n<ul class="assumptions">{items}</ul>')


#: reference rows drawn as bars at most (a longer comparison is read in its table and box plot)
MAX_ROW_BARS = 40

_SIMULATED = "Every task and copy was simulated: no time was taken from a trace."


def _write(page: rh.Page, path: str | Path) -> Path:
    return rh.write_page(page, rh.check_html_path(path))


@render.register(SimResult)
def _(result: SimResult, path: str | Path, command: Any = None, machine: Machine | None = None) -> Path:
    """One run's page. ``machine``: the nodecast Machine the platform was built from (``--machine``), if any."""
    page = rh.Page(f"Simulation of {result.app} on {result.platform} ({result.scheduler})")
    page.headline = rh.headline(result.headline())
    kernels = result.inputs.get("kernel_models", "")
    models = {"kernel durations": f"{result.options.get('kernel_times', 'mean')} of StarPU's history models {kernels}".strip(),
              "runtime": f"StarPU-like runtime, scheduler {result.scheduler}, {result.options.get('workers', '')} workers",
              "network": f"fluid bandwidth sharing ({result.options.get('sharing', 'maxmin')})"}
    run = rh.run_inputs(result.app, command, models=models,
                        trace_summary=f"task graph: {result.n_tasks:,} tasks, {rh.fmt(result.total_flops, 'count')} flop (nominal)")
    page.inputs = rh.inputs(rh.RunInputs(run.trace, run.version, run.command, run.trace_summary,
                                         [*_machines(machine), _platform_inputs(result)], run.models))
    page.tables.append(rh.table(result.workers_table(), {"tasks": "count", "busy_s": "s", "idle_s": "s", "busy": "share"},
                                title="Workers", caption="busy: share of the makespan the worker ran tasks."))
    if result.nodes:
        page.tables.append(rh.table(result.memory_table(), {"capacity_bytes": "B", "peak_bytes": "B", "mallocs": "count",
                                                            "evictions": "count", "write_backs": "count",
                                                            "chunk_reuses": "count", "full_events": "count",
                                                            "purges": "count"}, title="GPU memory"))
    links = result.links_table()
    if len(links):
        page.tables.append(rh.table(links, {"bandwidth_bps": "B/s", "bytes": "B", "busy_s": "s", "rate_bps": "B/s"},
                                    title="Links that carried data (most bytes first)",
                                    caption="rate_bps: mean rate while the link carried at least one copy."))
    if result.transfers:
        page.tables.append(rh.table(result.transfers_table(), {"copies": "count", "bytes": "B"},
                                    title="Copies per direction"))
    page.tables.append(rh.table(_options_table(result.options), title="Runtime options"))
    if result.trace is not None:
        page.figures.append(rh.gantt(result.schedule(), label=f"{result.platform}, {result.scheduler}",
                                     title="Schedule: tasks per worker, then copies per direction"))
    busy = result.workers_table()[["worker", "busy_s", "idle_s"]]
    page.figures.append(rh.bars(busy, "worker", ["busy_s", "idle_s"], "s", title="Busy and idle time per worker",
                                what="simulated time", anchor="workers"))
    assumptions = [*result.notes, "GFlop/s counts the application's nominal operations (Cholesky n³/3 + n²/2 + n/6, "
                   "LU 2n³/3) over the simulated makespan, as StarPU's examples print it"]
    page.not_modelled = _assumptions(_SIMULATED, assumptions)
    return _write(page, path)


def _sweep_frame(result: SweepResult) -> pd.DataFrame:
    t = result.table()
    return pd.DataFrame({"size": t["matrix_size"], "scheduler": t["scheduler"], "tasks": t["tasks"],
                         "makespan_s": t["makespan_s"], "performance": t["gflops"] * 1e9,
                         "evictions": t["evictions"], "purges": t["purges"]})


@render.register(SweepResult)
def _(result: SweepResult, path: str | Path, command: Any = None, machine: Machine | None = None) -> Path:
    """A sweep's page: the best run first, every run in a table, GFlop/s and makespan against size per scheduler."""
    what = result.app or result.graph_name or "DAG"
    page = rh.Page(f"Sweep of {what} on {result.platform}")
    page.headline = rh.headline(result.headline())
    run = rh.run_inputs(what, command, [machine] if machine is not None else [],
                        trace_summary=f"{result.title}; {len(result.rows)} runs")
    page.inputs = rh.inputs(run)
    df = _sweep_frame(result)
    units = {"tasks": "count", "makespan_s": "s", "performance": "flop/s", "evictions": "count", "purges": "count"}
    page.tables.append(rh.table(df, units, title="Runs", caption="performance: nominal GFlop/s of simulated time."))
    if df["size"].notna().all() and df["size"].nunique() > 1:
        plot = df.rename(columns={"size": "matrix size", "makespan_s": "makespan"})
        page.figures.append(rh.sweep(plot, "matrix size", "performance", "scheduler", y_unit="flop/s",
                                     title="GFlop/s against matrix size", anchor="sweep-gflops"))
        page.figures.append(rh.sweep(plot, "matrix size", "makespan", "scheduler", y_unit="s",
                                     title="Makespan against matrix size", anchor="sweep-makespan"))
    else:
        label = df["scheduler"] + (" " + df["size"].astype("Int64").astype(str) if df["size"].notna().all() else "")
        page.figures.append(rh.bars(df.assign(run=label), "run", ["makespan_s"], "s", title="Makespan per run",
                                    what="simulated makespan", anchor="sweep-makespan"))
    page.not_modelled = _assumptions(_SIMULATED, [
        "every run is simulated on its own (own task graph, own runtime, own random generator); no trace is kept",
        "GFlop/s counts the application's nominal operations over the simulated makespan"])
    return _write(page, path)


def _comparison_frame(result: ReferenceComparison) -> pd.DataFrame:
    t = result.table()
    df = pd.DataFrame({
        "machine": t["machine"], "line": t["line"], "app": t["app"], "precision": t["precision"],
        "size": t["matrix_size"], "scheduler": t["scheduler"], "workers": t["worker_config"],
        "reference": t["reference_gflops"].astype(float) * 1e9,
        "nodecast": pd.to_numeric(t["nodecast_gflops"], errors="coerce") * 1e9,
        "diff_pct": pd.to_numeric(t["diff_pct"], errors="coerce"),
        "memory full (ref/ours)": [f"{'Y' if a else '-'}/{'—' if b is None else 'Y' if b else '-'}"
                                   for a, b in zip(t["reference_memory_full"], t["nodecast_memory_full"], strict=True)],
        "likely cause": t["likely_cause"], "status": ["failed" if e else "ran" for e in t["error"]],
    })
    return df


@render.register(ReferenceComparison)
def _(result: ReferenceComparison, path: str | Path, command: Any = None, machine: Machine | None = None) -> Path:
    """The comparison's page: agreement first, every row, nodecast against StarPU+SimGrid per size and scheduler."""
    page = rh.Page(f"nodecast against StarPU+SimGrid: {result.path.name}")
    page.headline = rh.headline(result.headline())
    summary = f"{len(result.records)} rows of {', '.join(result.machines)}"
    if result.skipped:
        summary += f"; {result.skipped_line()}"
    page.inputs = rh.inputs(rh.run_inputs(str(result.path), command, [machine] if machine is not None else [],
                                          trace_summary=summary))
    df = _comparison_frame(result)
    units = {"line": "count", "size": "count", "reference": "flop/s", "nodecast": "flop/s", "diff_pct": "%"}
    page.tables.append(rh.table(df, units, title="Rows",
                                caption=f"diff_pct = 100 × (nodecast / reference − 1); rows within {WITHIN_PCT:g} % "
                                        "count as agreeing."))
    ran = result.ran
    title, sel = result.first_group() if ran else ("", [])
    if len({r["matrix_size"] for r in sel}) > 1:
        long = pd.DataFrame(
            [{"matrix size": r["matrix_size"], "series": f"{r['scheduler']} (nodecast)", "performance": r["nodecast_gflops"] * 1e9}
             for r in sel]
            + [{"matrix size": r["matrix_size"], "series": f"{r['scheduler']} (reference)",
                "performance": r["reference_gflops"] * 1e9} for r in sel])
        page.figures.append(rh.sweep(long, "matrix size", "performance", "series", y_unit="flop/s",
                                     title=f"{title}: nodecast and StarPU+SimGrid", anchor="compare-sweep"))
    elif 0 < len(ran) <= MAX_ROW_BARS:  # one size: a line has nothing to join, compare row by row
        bars = pd.DataFrame({
            "row": [f"{r['app']} {r['precision']} {r['matrix_size']} {r['scheduler']} {r['worker_config']} ({r['machine']})"
                    for r in ran],
            "StarPU+SimGrid": [r["reference_gflops"] * 1e9 for r in ran],
            "nodecast": [r["nodecast_gflops"] * 1e9 for r in ran]})
        page.figures.append(rh.bars(bars, "row", ["StarPU+SimGrid", "nodecast"], "flop/s", anchor="compare-rows",
                                    title="nodecast and StarPU+SimGrid per row", what="performance (nominal)"))
    if ran:
        errors: dict[str, list[float]] = {}
        for r in ran:
            errors.setdefault(r["scheduler"], []).append(r["diff_pct"])
        page.figures.append(rh.error_boxes(errors, "%", title="Difference per scheduler",
                                           what="100 × (nodecast / reference − 1) per row", anchor="compare-errors"))
    failed = df.assign(error=result.table()["error"])
    failed = failed[failed["error"] != ""][["line", "machine", "app", "size", "scheduler", "error"]]
    if len(failed):
        page.tables.append(rh.table(failed.rename(columns={"error": "why nodecast could not simulate it"}),
                                    {"line": "count", "size": "count"}, title="Rows nodecast could not simulate"))
    assumptions = [line for line in (result.failed_line(), result.skipped_line()) if line]
    assumptions.append("each row runs on its own machine's platform and kernel models; CPU workers compute with "
                       "worker configuration 'default', only drive GPUs with 'gpuonly'")
    assumptions.append("StarPU+SimGrid's figures are read from the reference file, not recomputed")
    page.not_modelled = _assumptions(_SIMULATED, assumptions)
    return _write(page, path)
