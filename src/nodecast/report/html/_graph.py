"""Helpers of the pages of results over an operation graph (``nodecast forecast``, ``nodecast replay``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nodecast.engine import metrics
from nodecast.workflows.forecast import ForecastResult
from nodecast.graph.opgraph import OpGraph, OpKind
from nodecast.graph.tracks import tracks
from nodecast.engine.replay import Schedule
from nodecast.notes import HOST_TIME, about, percent, share
from nodecast.report.html.timelines import natural_key
from nodecast.report.tables import fmt_seconds
from nodecast.words import plural


def timeline_ops(graph: OpGraph, schedule: Schedule) -> pd.DataFrame:
    """One row per op of ``graph`` as ``report.html.timeline`` draws it: track (``GPU d stream q`` or
    ``host thread t``), start and end (s after the graph's origin), kind (its critical-path category) and name."""
    # NOTE: track, kind and name are categoricals (a small code per op into the distinct texts) and the times
    # are the schedule's own arrays, not copies: as text, every op held a string reference per column and pandas
    # made each column a string array of its own (about 230 B per graph op for the page's two timelines).
    inverse, track_labels = tracks(graph)
    track = pd.Categorical.from_codes(inverse, track_labels)
    track = track.reorder_categories(sorted(track_labels, key=natural_key))  # the rows' order on the page
    code, cats = metrics.op_category(graph)
    return pd.DataFrame({"track": track, "start_s": schedule.start_s, "end_s": schedule.end_s,
                         "kind": pd.Categorical.from_codes(code, cats), "name": _names(graph, code, cats)},
                        copy=False)


def _names(graph: OpGraph, code: np.ndarray, cats: list[str]) -> pd.Categorical:
    """Every op's name, or its category (``cats[code]``) where it has none, as a categorical of distinct texts."""
    name_code, texts = metrics.name_codes(graph.names)
    unnamed = np.array([t == "" for t in texts])[name_code]  # per name id
    index = {t: i for i, t in enumerate(texts)}
    of_cat = np.array([index.setdefault(c, len(index)) for c in cats], dtype=np.int32)  # a label may be a name too
    name_id = graph.ops["name_id"]
    return pd.Categorical.from_codes(np.where(unnamed[name_id], of_cat[code], name_code[name_id]), list(index))


def trace_summary(graph: OpGraph) -> str:
    """``nsys-sqlite; GPUs 0: Tesla T4; 325 ops, 482 edges``."""
    gpus = ", ".join(f"{d}: {n}" for d, n in sorted(graph.gpus.items())) or "not recorded"
    return f"{graph.format}; GPUs {gpus}; {len(graph):,} ops, {graph.n_edges:,} edges"


def critical_path_frame(breakdowns: dict[str, dict[str, float]]) -> pd.DataFrame:
    """Breakdowns (run -> category -> seconds) as ``report.html.critical_path`` takes them: a row per run,
    categories ordered by their largest time."""
    cats = sorted({c for b in breakdowns.values() for c in b},
                  key=lambda c: -max(b.get(c, 0.0) for b in breakdowns.values()))
    return pd.DataFrame([[b.get(c, 0.0) for c in cats] for b in breakdowns.values()], index=list(breakdowns),
                        columns=cats)


def host_work(result: ForecastResult) -> str:
    """What a forecast did with the host work, for "What was not modelled": kept at (or scaled from) its time on A,
    how much there is on A, and its share of the forecast's end to end (its note's); "" without host work."""
    g = result.graph
    host = g.ops["kind"] >= OpKind.API
    note = next((n for n in result.notes if about(n) == HOST_TIME), None)
    if not host.any() and note is None:
        return ""
    on_a = float(g.ops["source_dur_s"][host].sum())
    on_b = float(result.costs.duration_s[host].sum())
    how = "kept at its time on A" if on_b == on_a else f"scaled x{on_b / on_a:.3g} from its time on A (--host-scale)"
    what = (f"{plural(int(host.sum()), 'host op')} (API calls, sync returns: {fmt_seconds(on_a)} on A) and the gaps "
            "between calls" if host.any() else "the gaps between GPU ops as recorded (the trace has no host API "
            "records)")
    weight = share(note) if note is not None else None
    on_path = f"; on B's critical path, {percent(weight)} of the forecast's end to end" if weight is not None else ""
    return f"Host work {how}, not modelled: {what}{on_path}."
