"""``nodecast simulate`` at the terminal: one run's summary, a sweep's rows, the reference comparison.

Plain fixed-width lines (not rich tables), as the simulator has always
printed them, so that scripts reading them keep working. Units are in
every header: seconds, GB (1e9 B), GB/s, GFlop/s (nominal flops / simulated
time).
"""

from __future__ import annotations

from rich.console import Console

from nodecast.report.terminal import render
from nodecast.runtime.outputs import SimResult
from nodecast.workflows.simulate_reference import WITHIN_PCT, ReferenceComparison
from nodecast.workflows.simulate_sweep import SweepResult

#: links shown in a run's summary (busiest first)
TOP_LINKS = 8


def summary_lines(result: SimResult) -> list[str]:
    """Plain-text summary: headline, per worker, per GPU memory, busiest links (units in every header), notes."""
    out = [
        f"{result.app} on {result.platform} with {result.scheduler}: makespan {result.makespan_s * 1e3:.1f} ms, "
        f"{result.gflops:.1f} GFlop/s (nominal), {result.n_tasks} tasks",
        "worker            tasks    busy (s)    idle (s)   busy %",
    ]
    for w in result.workers:
        pct = 100 * w.busy_s / result.makespan_s if result.makespan_s > 0 else 0.0
        out.append(f"{w.name:<14} {w.tasks:8d} {w.busy_s:11.4f} {w.idle_s:11.4f} {pct:7.1f}")
    if result.nodes:
        out.append("GPU memory      capacity (GB)  peak (GB)  mallocs  evictions  write-backs  purges")
        for n in result.nodes:
            out.append(
                f"{n.name:<14} {n.capacity_bytes / 1e9:14.3f} {n.peak_bytes / 1e9:10.3f} {n.mallocs:8d} {n.evictions:10d} "
                f"{n.write_backs:12d} {n.purges:7d}"
            )
    busy = result.busiest_links(TOP_LINKS)
    if busy:
        out.append("link (busiest first)                     GB moved   busy (s)   mean GB/s while busy")
        for link in busy:
            rate = link.bytes / link.busy_s / 1e9 if link.busy_s > 0 else 0.0
            out.append(f"{link.name[:40]:<40} {link.bytes / 1e9:9.3f} {link.busy_s:10.4f} {rate:10.3f}")
    for note in result.notes:
        out.append(f"note: {note}")
    return out


def sweep_lines(result: SweepResult) -> list[str]:
    """One line per run: size, scheduler, tasks, makespan (s), GFlop/s, purges."""
    out = ["size      scheduler  tasks      makespan (s)  GFlop/s  purges"]
    for r in result.rows:
        size = r["matrix_size"] if r["matrix_size"] is not None else "-"  # a DAG has no matrix size
        out.append(f"{size:<9} {r['scheduler']:<10} {r['tasks']:<10} {r['makespan_s']:12.4f} {r['gflops']:8.1f} {r['purges']:7d}")
    return out


def comparison_lines(result: ReferenceComparison) -> list[str]:
    """One line per reference row (both GFlop/s, difference, memory-full flags, likely cause), then the summary lines."""
    several = len(result.machines) > 1
    out = [
        ("machine        " if several else "")
        + "app        prec  size   sched  workers  reference GF/s  nodecast GF/s   diff %  full(ref/ours)  cause if > 3 %"
    ]
    for r in result.records:
        head = (f"{r['machine'][:14]:<14} " if several else "") + (
            f"{r['app'][:10]:<10} {r['precision'][:6]:<5} {r['matrix_size']:<6} {r['scheduler']:<6} {r['worker_config'][:7]:<8}"
            f"{r['reference_gflops']:14.1f} "
        )
        if r["error"]:
            out.append(f"{head}failed: {r['error']}")
            continue
        flag = f"{'Y' if r['reference_memory_full'] else '-'}/{'Y' if r['nodecast_memory_full'] else '-'}"
        out.append(f"{head}{r['nodecast_gflops']:14.1f} {r['diff_pct']:+8.1f}  {flag:^14}  {r['likely_cause']}")
    ran = result.ran
    out.append(
        f"{result.within()}/{len(ran)} rows within {WITHIN_PCT:g} %; "
        f"memory-full flag agrees on {result.memory_flag_agrees()}/{len(ran)} rows; "
        f"nodecast: {result.simulated_s():.1f} s of simulations, {result.wall_s:.1f} s wall"
    )
    out += [line for line in (result.failed_line(), result.skipped_line()) if line]
    return out


def _print(lines: list[str], console: Console | None) -> None:
    from nodecast.report.tables import console as results_console
    from nodecast.report.tables import plain

    con = console or results_console(width_when_piped=None)
    for line in lines:
        con.print(plain(line), soft_wrap=True)


@render.register(SimResult)
def _(result: SimResult, console: Console | None = None) -> None:
    _print(summary_lines(result), console)


@render.register(SweepResult)
def _(result: SweepResult, console: Console | None = None) -> None:
    _print(sweep_lines(result), console)


@render.register(ReferenceComparison)
def _(result: ReferenceComparison, console: Console | None = None) -> None:
    _print(comparison_lines(result), console)
