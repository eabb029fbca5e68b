"""``nodecast kernels`` at the terminal: what was projected, the per-kernel (or per-launch) table, notes, errors.

Times print with an SI prefix (``report.tables.fmt_seconds``); the
roofline's interval (eq. 9) is one column ``low – high``; MAPE and WMAPE in %.
"""

from __future__ import annotations

from rich.console import Console

from nodecast.workflows.kernels import KernelsResult, TargetErrors
from nodecast.report import tables as t
from nodecast.report.terminal import render
from nodecast.words import plural
from nodecast.text import shown


def display_table(result: KernelsResult, per_launch: bool = False):  # noqa: ANN201 (DataFrame)
    """``result.table`` as printed: the roofline interval as text after ``bound``, no bound or occurrence on the total row."""
    table = result.table(per_launch)
    if "roofline_low_s" in table:
        lo, hi = table.pop("roofline_low_s"), table.pop("roofline_high_s")
        at = list(table.columns).index("bound") + 1 if "bound" in table else len(table.columns)
        table.insert(at, "interval (roofline)",
                     [f"{t.fmt_seconds(a)} – {t.fmt_seconds(b)}" for a, b in zip(lo, hi, strict=True)])
    for col in ("bound", "occurrence"):
        if col in table:
            table[col] = table[col].astype(object).where(table["kernel"] != "total", "")
    return table


def _note(console: Console, text: str) -> None:
    console.print(t.plain(f"  note: {text}"), soft_wrap=True)


def render_target_errors(errors: TargetErrors, target: str, console: Console) -> None:
    """How the launches were paired, and each model's MAPE and WMAPE against the target run."""
    console.print(t.plain(f"{plural(errors.paired, 'launch', 'launches')} paired with the target run by kernel name "
                          f"and occurrence; unmatched: {errors.unmatched_source} source, {errors.unmatched_target} "
                          "target"), soft_wrap=True)
    t.render(errors.table, f"Error against the launches measured on {shown(target)}",
             {"MAPE": t.fmt_pct, "WMAPE": t.fmt_pct, "ops": t.fmt_int}, console,
             caption="MAPE = 100 * mean(|A - P| / A) over launches (the roofline paper's metric); "
                     "WMAPE weights by time; 'unchanged' = the source time.")


@render.register(KernelsResult)
def _(result: KernelsResult, console: Console | None = None, per_launch: bool = False) -> None:
    console = console or t.console()
    source, target = result.source, result.target
    console.print(t.plain(plural(len(result.launches), "kernel launch", "kernel launches"), style="bold")
                  + t.plain(f" ({plural(result.kernel_count(), 'kernel')}) profiled on {shown(source.name)} "
                            f"({shown(source.gpu.model)}), projected onto {shown(target.name)} "
                            f"({shown(target.gpu.model)})"))
    table = display_table(result, per_launch)
    fmts = {c: t.fmt_seconds for c in table.columns if c.endswith("_s")}
    fmts["launches"] = t.fmt_int
    t.render(table, f"Kernel time on {shown(source.name)} (source_s, measured under ncu) and projected on "
             f"{shown(target.name)} per model (<model>_s; sums over launches; bound: the largest term on the target)",
             fmts, console)
    numbered = result.numbered()
    if numbered:
        _note(console, f"different kernels whose short names coincide are numbered ({', '.join(numbered)}) "
                       "in order of first launch; -o writes their full names (columns kernel and label)")
    for note in result.notes():
        _note(console, note)
    if result.against_target is not None:
        render_target_errors(result.against_target, target.name, console)
