"""The page of a forecast on several targets (``nodecast forecast --to a,b --html``, ``--sweep``).

Headline: end to end measured on A, then forecast per target (the fastest
and the slowest beyond six), then the speed-up A / B of the fastest target
(``report.speedup``). Inputs: the trace, node A and each distinct target
machine with the source of each value (a sweep's what-if values are in its
notes), the command line. What each target kept of A and changed, under the
headline. Tables: the unchanged case (A's times), then one row per target. Figures: end to end
of the run on A (as measured, and replayed) and per target, split into the
critical path's GPU, host and waiting time; for a sweep, end to end against the first swept parameter, one line per
machine and the other parameters. Not modelled: the notes every target
shares, then each target's own.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd

from nodecast.engine import metrics
from nodecast.cost.change import UNCHANGED
from nodecast.workflows.targets import Comparison
from nodecast.notes import Note
from nodecast.report import html as rh
from nodecast.speedup import MEANING, SPEEDUP

#: Targets whose machines are listed one by one under the run's inputs.
MACHINES_LISTED = 6


def _machines(comp: Comparison) -> list:  # noqa: ANN401 (Machine)
    machines = [comp.source_machine] if comp.source_machine is not None else []
    seen = set()
    for spec in comp.specs:
        if spec.machine not in seen and len(seen) < MACHINES_LISTED:
            seen.add(spec.machine)
            # a sweep's what-if values are in its notes; a GPU alone is A's node with that GPU
            machines.append(type(spec)(spec.machine).load(comp.source_machine))
    return machines


def sweep_rows(comp: Comparison) -> pd.DataFrame | None:
    """For a sweep: one row per target with its machine, its parameters and its end to end; None otherwise."""
    if not comp.specs or not any(s.params for s in comp.specs):
        return None
    table = comp.table()
    rows = []
    for spec, (_, row) in zip(comp.specs, table.iterrows(), strict=True):
        params = dict(spec.params)
        rows.append({"machine": spec.machine, **params, "end to end": row["end_to_end_s"]})
    return pd.DataFrame(rows)


#: The split of a run's end to end along its critical path: figure segment -> ``path_split`` column.
_PARTS = {"GPU work": "path_gpu_s", "host work": "path_host_s", "launch, dependency and other waits": "path_other_s"}
#: The one segment of the measured run on A: a trace gives its end to end, not a critical path.
_MEASURED = "measured on A (not split)"


def _per_target(comp: Comparison) -> rh.Figure:
    """End to end per run, split along its critical path: A as measured (one segment: the trace gives no
    critical path), A replayed (the baseline every target's forecast is replayed like), then each target."""
    table = comp.table()
    runs = [f"{comp.source} (A, measured)"]
    rows = [{_MEASURED: comp.measured_end_to_end_s}]
    if comp.source_path_s:
        runs.append(f"{comp.source} (A, replayed)")
        rows.append({part: comp.source_path_s[col] for part, col in _PARTS.items()})
    runs += list(table["target"])
    rows += [{part: row[col] for part, col in _PARTS.items()} for _, row in table.iterrows()]
    parts = pd.DataFrame(rows, index=runs, columns=[*_PARTS, _MEASURED]).fillna(0.0)
    figure = rh.critical_path(parts, title="End to end per run, split along its critical path", anchor="per-target")
    note = (f'<p class="caption">{html.escape(comp.source)} (A, measured): the trace\'s end to end, not split; '
            "(A, replayed): the trace's operation graph replayed with its measured times, as each target's is with "
            "its forecast times.</p>")
    return replace(figure, caption=figure.caption + note)


def _labelled(label: str, note: str) -> str:
    """``(target) note``, keeping what the note rests on when it is a ``Note`` (its severity decides where it shows)."""
    text = f"({label}) {note}"
    return Note(text, note.about, note.share, note.origin) if isinstance(note, Note) else text


def comparison_page(comp: Comparison, command: Sequence[str] | str | None = None) -> rh.Page:
    """The page of ``comp`` (see the module docstring)."""
    table = comp.table()
    page = rh.Page(f"Forecast of {Path(comp.trace).name} on {len(table):,} targets")
    start = metrics.end_to_end_start(metrics.notes_have_api(comp.common_notes()))
    page_note = (f"End to end: from the {start} to the end of the last GPU op; forecast by replaying the "
                 "program's operation graph with every op's time on the target from the models.")
    page.inputs = rh.inputs(rh.run_inputs(comp.trace, command, _machines(comp),
                                          trace_summary=f"targets: {', '.join(table['target'])}"))
    with_unchanged = comp.table_with_unchanged()  # the unchanged case first: did the models move the answer?
    shown = with_unchanged.drop(columns="has_interval", errors="ignore").assign(
        **comp.intervals(with_unchanged))  # no interval: —
    shown = shown.rename(columns={"end_to_end_s": "end to end", "low_s": "low", "high_s": "high", "speedup": SPEEDUP,
                                  "gpu_busy_s": "GPU busy", "kernels_s": "kernels", "copies_s": "copies",
                                  "memsets_s": "memsets", "path_gpu_s": "path: GPU", "path_host_s": "path: host",
                                  "path_other_s": "path: waits", "kept_ops": "kept ops"})
    units = {**dict.fromkeys(["end to end", "low", "high", "GPU busy", "kernels", "copies", "memsets", "path: GPU",
                              "path: host", "path: waits"], "s"), SPEEDUP: "x", "kept ops": "count"}
    page.tables.append(rh.table(shown, {c: u for c, u in units.items() if c in shown}, title="Forecast per target",
                                caption=f"{UNCHANGED}: every op at its time on A, the graph replayed (the forecast "
                                        f"when the models move nothing). {SPEEDUP}: measured on A / forecast on the "
                                        f"target, {MEANING}. "
                                        "low, high: the end-to-end interval (— where no model gives one). "
                                        "GPU busy: summed over GPUs; kernels, copies, "
                                        "memsets: summed op time; path: the critical path split into GPU work, host "
                                        "work and launch or dependency waits; kept ops: GPU ops no model handles."))
    page.figures.append(_per_target(comp))
    rows = sweep_rows(comp)
    if rows is not None:
        keys = [k for k in rows.columns if k not in ("machine", "end to end")]
        rest = keys[1:]
        rows["series"] = rows["machine"] + rows[rest].apply(
            lambda r: "".join(f", {k}={v:g}" for k, v in r.items()), axis=1) if rest else rows["machine"]
        page.figures.append(rh.sweep(rows, keys[0], "end to end", "series", "", "s",
                                     title=f"End to end against {keys[0]}", anchor="sweep"))
    common = comp.common_notes()
    notes = list(common) + [_labelled(label, n) for label, ns in comp.notes.items() for n in ns if n not in common]
    # The answer box holds each target's decisive notes (nodecast.notes), as the one-target page does.
    page.headline = rh.headline(comp.headline(), note=page_note, notes=notes, change=comp.change_lines())
    kept = table.loc[table["kept_ops"] > 0, ["target", "kept_ops"]].rename(columns={"kept_ops": "GPU ops kept"})
    page.not_modelled = rh.not_modelled(kept if len(kept) else None, notes, {"GPU ops kept": "count"})
    return page


@rh.render.register(Comparison)
def render_comparison(comp: Comparison, path: str | Path, command: Sequence[str] | str | None = None,
                      **_: object) -> Path:
    """Write the page of ``comp`` to ``path`` (.html)."""
    return rh.write_page(comparison_page(comp, command), path)
