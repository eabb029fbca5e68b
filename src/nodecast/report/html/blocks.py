"""The report's HTML blocks over plain data: headline numbers, run inputs, tables, what was not modelled.

Every number is printed with its unit (``units.fmt``, the terminal's
formatters) and carries its exact value in a ``data-value`` attribute, so
a reader sees ``1.5 ms`` and a program (the browser test, a scraper) reads
``0.0015``; tables sort on those exact values.
"""

from __future__ import annotations

import html
import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from nodecast.notes import DECISIVE_SHARE, split
from nodecast.headline import Number
from nodecast.report.html.page import Block
from nodecast.report.html.units import UNITS, check_unit, fmt


@dataclass(frozen=True)
class MachineInputs:
    """A machine as the run used it: ``values`` has columns field, value, unit, source (one row per value)."""

    name: str
    values: pd.DataFrame
    description: str = ""


@dataclass(frozen=True)
class RunInputs:
    """What a run read and how it was started.

    ``trace``: the input path; ``trace_summary``: one line on it (format,
    counts); ``models``: model name -> what it models; ``command``: the
    command line as its words (or one string).
    """

    trace: str
    version: str
    command: Sequence[str] | str
    trace_summary: str = ""
    machines: Sequence[MachineInputs] = ()
    models: Mapping[str, str] = field(default_factory=dict)


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _value_attr(value: object) -> str:
    """The exact value for ``data-value`` (repr keeps every digit of a float), as the page's sort script reads it
    with ``parseFloat``: infinities as ``Infinity``/``-Infinity`` (it reads Python's ``inf`` as NaN, i.e. missing),
    NaN as ``nan`` (missing, sorted last)."""
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return "nan" if math.isnan(v) else repr(v)


def headline(numbers: Sequence[Number], note: str = "", notes: Sequence[str] = (),
             change: Sequence[str] = ()) -> Block:
    """The answer first: one big number per ``Number``, its interval below it; then the lines of ``change`` (what
    node B kept of A and what it changed, ``cost.change``); then, from ``notes``, the decisive ones
    (``nodecast.notes``: more than 3 % of the answer rests on each), largest share first."""
    cards = []
    for n in numbers:
        check_unit(n.unit)
        interval = ""
        if n.low is not None and n.high is not None:
            interval = (
                f'<div class="interval">interval <span class="low" data-value="{_value_attr(n.low)}">'
                f'{_esc(fmt(n.low, n.unit))}</span> – <span class="high" data-value="{_value_attr(n.high)}">'
                f"{_esc(fmt(n.high, n.unit))}</span></div>"
            )
        cards.append(
            f'<div class="number" data-label="{_esc(n.label)}" data-unit="{_esc(n.unit)}">'
            f'<div class="label">{_esc(n.label)}</div>'
            f'<div class="value" data-value="{_value_attr(n.value)}">{_esc(fmt(n.value, n.unit))}</div>'
            f"{interval}" + (f'<div class="note">{_esc(n.note)}</div>' if n.note else "") + "</div>"
        )
    body = f'<div class="headline">{"".join(cards)}</div>'
    for line in change:
        body += f'\n<p class="change">{_esc(line)}</p>'
    if note:
        body += f'\n<p class="caption">{_esc(note)}</p>'
    decisive, _ = split(notes)
    if decisive:
        items = "".join(f"<li>{_esc(n)}</li>" for n in decisive)
        body += (f'\n<div class="decisive-notes"><p>What this answer rests on (notes that more than '
                 f'{100 * DECISIVE_SHARE:g} % of it depends on; every note is under "What was not modelled"):</p>'
                 f"<ul>{items}</ul></div>")
    return Block(body)


def _machine(m: MachineInputs) -> str:
    missing = {"field", "value", "source"} - set(m.values.columns)
    if missing:
        raise ValueError(f"machine {m.name!r}: values lack columns {sorted(missing)}")
    units = m.values["unit"] if "unit" in m.values.columns else pd.Series([""] * len(m.values))
    rows = []
    for f_, v, u, s in zip(m.values["field"], m.values["value"], units, m.values["source"], strict=True):
        u = "" if u is None or (isinstance(u, float) and math.isnan(u)) else str(u)
        shown = fmt(v, u) if u in UNITS else f"{fmt(v, '')} {u}"
        rows.append(
            f'<tr><td>{_esc(f_)}</td><td class="num" data-value="{_value_attr(v)}">{_esc(shown)}</td>'
            f"<td>{_esc(s)}</td></tr>"
        )
    desc = f" <span class=\"muted\">{_esc(m.description)}</span>" if m.description else ""
    return (
        f"<h3>Machine {_esc(m.name)}{desc}</h3>\n"
        '<table class="data machine"><thead><tr><th>value</th><th class="num">as used</th><th>source</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def inputs(run: RunInputs) -> Block:
    """The run's inputs: trace, machines with the source of each value, models, nodecast version, command line."""
    command = run.command if isinstance(run.command, str) else shlex.join(run.command)
    items = [("Trace", f"<code>{_esc(run.trace)}</code>" + (f" — {_esc(run.trace_summary)}" if run.trace_summary else ""))]
    if run.models:
        models = "".join(f"<li><b>{_esc(k)}</b>: {_esc(v)}</li>" for k, v in run.models.items())
        items.append(("Models", f"<ul>{models}</ul>"))
    items.append(("nodecast version", f"<code>{_esc(run.version)}</code>"))
    items.append(("Command line", f"<pre>{_esc(command)}</pre>"))
    dl = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items)
    machines = "\n".join(_machine(m) for m in run.machines)
    return Block(f'<dl class="inputs">{dl}</dl>\n{machines}')


def table(
    df: pd.DataFrame,
    units: Mapping[str, str] | None = None,
    title: str = "",
    caption: str = "",
) -> Block:
    """``df`` as a table sortable by clicking a header; ``units`` maps column -> unit (``units.UNITS``).

    Columns without a unit print text as it is and numbers to 4 significant
    digits. Numeric cells keep their exact value in ``data-value``.
    """
    units = dict(units or {})
    for col, unit in units.items():
        if col not in df.columns:
            raise ValueError(f"units name column {col!r}, which the table does not have")
        check_unit(unit)
    numeric = [col in units and units[col] != "" or pd.api.types.is_numeric_dtype(df[col]) for col in df.columns]
    head = "".join(
        f'<th class="sortable{" num" if num else ""}" tabindex="0" scope="col">{_esc(col)}</th>'
        for col, num in zip(df.columns, numeric, strict=True)
    )
    columns = []
    for col, num in zip(df.columns, numeric, strict=True):
        values = df[col].to_numpy()
        unit = units.get(col, "")
        if num:
            shown = [fmt(v, unit) for v in values]
            exact = [_value_attr(v) for v in values]
            columns.append([f'<td class="num" data-value="{e}">{_esc(s)}</td>' for s, e in zip(shown, exact, strict=True)])
        else:
            columns.append([f"<td>{_esc('—' if _missing(v) else v)}</td>" for v in values])
    body = "".join(f"<tr>{''.join(cells)}</tr>" for cells in zip(*columns, strict=True)) if columns else ""
    text = (
        f'<div class="scroll"><table class="data"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
    )
    if caption:
        text += f'\n<p class="caption">{_esc(caption)}</p>'
    return Block(text, title=title)


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def not_modelled(
    kept: pd.DataFrame | None,
    assumptions: Sequence[str],
    units: Mapping[str, str] | None = None,
    none_kept: str = "No op was kept at its source time: every op was modelled.",
    host: str = "",
) -> Block:
    """What the forecast did not model: the ops kept at their source time (a table), the host work when it kept its
    source time too, and every assumption made (the decisive ones first, in bold: ``nodecast.notes``).

    ``kept``: one row per op (or per group of ops) that kept its measured
    time; ``None`` or empty shows ``none_kept`` instead. ``host``: what
    became of the host work (kept at its time on A), said after them.
    """
    parts = []
    if kept is None or len(kept) == 0:
        parts.append(f'<p class="kept-none">{_esc(none_kept)}</p>')
    else:
        parts.append(f"<h3>Kept at their source time: {len(kept):,} {'row' if len(kept) == 1 else 'rows'}</h3>")
        parts.append(table(kept, units).html)
    if host:
        parts.append(f'<p class="host-kept">{_esc(host)}</p>')
    if assumptions:
        decisive, rest = split(assumptions)
        items = "".join(f'<li class="decisive"><strong>{_esc(a)}</strong></li>' for a in decisive)
        items += "".join(f"<li>{_esc(a)}</li>" for a in rest)
        parts.append(f'<h3>Assumptions</h3>\n<ul class="assumptions">{items}</ul>')
    else:
        parts.append('<p class="muted">No assumption was recorded.</p>')
    return Block("\n".join(parts))
