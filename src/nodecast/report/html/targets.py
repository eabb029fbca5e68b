"""The page of a forecast on several targets (``nodecast forecast --to a,b --html``, ``--sweep``).

Headline: end to end measured on A, then forecast per target (the fastest
and the slowest beyond six). Inputs: the trace, node A and each distinct
target machine with the source of each value (a sweep's what-if values are
in its notes), the command line. Tables: one row per target. Figures: end to
end per target split into the critical path's GPU, host and waiting time;
for a sweep, end to end against the first swept parameter, one line per
machine and the other parameters. Not modelled: the notes every target
shares, then each target's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from nodecast.graph.targets import Comparison
from nodecast.report import html as rh

#: Targets whose machines are listed one by one under the run's inputs.
MACHINES_LISTED = 6


def _machines(comp: Comparison) -> list:  # noqa: ANN401 (Machine)
    machines = [comp.source_machine] if comp.source_machine is not None else []
    seen = set()
    for spec in comp.specs:
        if spec.machine not in seen and len(seen) < MACHINES_LISTED:
            seen.add(spec.machine)
            machines.append(type(spec)(spec.machine).load())  # a sweep's what-if values are in its notes
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


def comparison_page(comp: Comparison, command: Sequence[str] | str | None = None) -> rh.Page:
    """The page of ``comp`` (see the module docstring)."""
    table = comp.table()
    page = rh.Page(f"Forecast of {Path(comp.trace).name} on {len(table):,} targets")
    page.headline = rh.headline(comp.headline(), note="End to end: from the first API call to the end of the last "
                                "GPU op; forecast by replaying the program's operation graph with every op's time "
                                "on the target from the models.")
    page.inputs = rh.inputs(rh.run_inputs(comp.trace, command, _machines(comp),
                                          trace_summary=f"targets: {', '.join(table['target'])}"))
    shown = table.rename(columns={"end_to_end_s": "end to end", "low_s": "low", "high_s": "high", "speedup": "A / B",
                                  "gpu_busy_s": "GPU busy", "kernels_s": "kernels", "copies_s": "copies",
                                  "memsets_s": "memsets", "path_gpu_s": "path: GPU", "path_host_s": "path: host",
                                  "path_other_s": "path: waits", "kept_ops": "kept ops"})
    units = {**dict.fromkeys(["end to end", "low", "high", "GPU busy", "kernels", "copies", "memsets", "path: GPU",
                              "path: host", "path: waits"], "s"), "A / B": "x", "kept ops": "count"}
    page.tables.append(rh.table(shown, {c: u for c, u in units.items() if c in shown}, title="Forecast per target",
                                caption="A / B above 1: B is faster. GPU busy: summed over GPUs; kernels, copies, "
                                        "memsets: summed op time; path: the critical path split into GPU work, host "
                                        "work and launch or dependency waits; kept ops: GPU ops no model handles."))
    parts = pd.DataFrame({"GPU work": table["path_gpu_s"], "host work": table["path_host_s"],
                          "launch, dependency and other waits": table["path_other_s"]})
    parts.index = list(table["target"])
    page.figures.append(rh.critical_path(parts, title="End to end per target, split along its critical path",
                                         anchor="per-target"))
    rows = sweep_rows(comp)
    if rows is not None:
        keys = [k for k in rows.columns if k not in ("machine", "end to end")]
        rest = keys[1:]
        rows["series"] = rows["machine"] + rows[rest].apply(
            lambda r: "".join(f", {k}={v:g}" for k, v in r.items()), axis=1) if rest else rows["machine"]
        page.figures.append(rh.sweep(rows, keys[0], "end to end", "series", "", "s",
                                     title=f"End to end against {keys[0]}", anchor="sweep"))
    common = comp.common_notes()
    notes = list(common) + [f"({label}) {n}" for label, ns in comp.notes.items() for n in ns if n not in common]
    kept = table.loc[table["kept_ops"] > 0, ["target", "kept_ops"]].rename(columns={"kept_ops": "GPU ops kept"})
    page.not_modelled = rh.not_modelled(kept if len(kept) else None, notes, {"GPU ops kept": "count"})
    return page


@rh.render.register(Comparison)
def render_comparison(comp: Comparison, path: str | Path, command: Sequence[str] | str | None = None,
                      **_: object) -> Path:
    """Write the page of ``comp`` to ``path`` (.html)."""
    return rh.write_page(comparison_page(comp, command), path)
