"""Many evaluations at once: two folders of traces paired by file name (a kernel zoo's GPUs, say).

The kernel errors of one evaluation (per model, the kernel launches of run A
aligned with those of run B: MAPE, WMAPE and the kernel totals) are
``nodecast.workflows.evaluate.kernel_table``, which ``Evaluation.kernels()``
gives; each pair here is one such evaluation.

``evaluate_pairs`` evaluates every pair of files with the same name in two
folders (run A's traces and run B's), each pair with its own machines
(``--from``/``--to``, else picked from each trace's GPU name), and pools the
errors over all pairs: a model's pooled WMAPE is ``100 * sum|A - P| / sum A``
over every evaluated op of every pair. A pair that cannot be evaluated
(unreadable file, nothing to evaluate, a GPU that is not the machine's) is
kept with its reason and does not stop the others.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nodecast import paths
from nodecast.errors import InputError
from nodecast.workflows.evaluate import UNCHANGED, Evaluation, evaluate
from nodecast.headline import Number
from nodecast.words import plural

if TYPE_CHECKING:
    from nodecast.traces.ncu import KernelMetrics


@dataclass
class PairOutcome:
    """One pair of traces: its evaluation and machines, or the reason it has none."""

    name: str
    path_a: Path
    path_b: Path
    evaluation: Evaluation | None = None
    source: str | None = None
    target: str | None = None
    reason: str | None = None


@dataclass
class PairsEvaluation:
    """Every pair of two folders, the files without a partner, and the pooled errors."""

    outcomes: list[PairOutcome]
    unpaired_a: list[str] = field(default_factory=list)
    unpaired_b: list[str] = field(default_factory=list)
    dir_a: str = ""  # the folders, as given
    dir_b: str = ""

    @property
    def skipped(self) -> list[PairOutcome]:
        """The pairs that could not be evaluated, each with its reason."""
        return [o for o in self.outcomes if o.reason]

    def require_evaluated(self) -> PairsEvaluation:
        """``self``, or InputError when no pair could be evaluated (naming the first pair's reason)."""
        if not self.evaluated:
            first = next(o for o in self.outcomes if o.reason)
            raise InputError(f"no pair could be evaluated ({len(self.outcomes)} pairs; first, {first.name}: "
                             f"{first.reason})", key="evaluate")
        return self

    def machine_pairs(self) -> dict[str, str]:
        """Per evaluated pair: ``source -> target`` (the machines picked for it)."""
        return {o.name: f"{o.source} -> {o.target}" for o in self.evaluated}

    def headline(self) -> list[Number]:
        """Pairs evaluated; per kind of model (transfer, then kernel), the lowest pooled WMAPE of a model of that
        kind, with the ops it was scored on and keeping A's times on those same ops in its note; then keeping A's
        times (``unchanged``) over every evaluated op.

        Kinds are ranked apart because a transfer model is scored on copies and a kernel model on kernels: one
        WMAPE over a few copies and one over thousands of kernels measure different things, and the lower of the
        two says nothing about which model is better."""
        out = [Number("pairs evaluated", len(self.evaluated), "count",
                      note=f"of {plural(len(self.outcomes), 'pair')} with the same file name")]
        pooled = self.pooled()
        overall = pooled[pooled["category"] == "all"].set_index("model")
        kinds = self.model_kinds()
        for kind in sorted(set(kinds.values()), key=lambda k: (k != "transfer", k != "kernel", k)):
            models = overall["WMAPE"][[m for m in overall.index if kinds.get(m) == kind]].dropna()
            if not len(models):
                continue
            best = str(models.idxmin())
            cats = pooled[(pooled["model"] == best) & (pooled["category"] != "all")]
            cats = cats.sort_values("ops", ascending=False, kind="stable")
            scored = ", ".join(f"{c} {n:,}" for c, n in zip(cats["category"], cats["ops"], strict=True))
            ops, pairs = int(overall.loc[best, "ops"]), int(overall.loc[best, "pairs"])
            out.append(Number(f"lowest pooled WMAPE of the {kind} models: {best}", float(models[best]), "%",
                              note=f"best of {plural(len(models), f'{kind} model')}, scored on the "
                                   f"{plural(ops, 'op')} ({scored}) it projected in "
                                   f"{plural(pairs, 'pair')}; keeping A's times on those ops: "
                                   f"{self.pooled_on(best, UNCHANGED):.1f} %"))
        if UNCHANGED in overall.index:
            out.append(Number("pooled WMAPE of keeping A's times (unchanged)", float(overall.loc[UNCHANGED, "WMAPE"]),
                              "%", note="every evaluated op of every pair, copies and kernels together"))
        return out

    def model_kinds(self) -> dict[str, str]:
        """Per model of the evaluated pairs: its kind (``"transfer"``, ``"kernel"``); ``unchanged`` has none."""
        return {m.name: m.kind for o in self.evaluated if o.evaluation is not None
                for m in o.evaluation.projection.models}

    def pooled_on(self, model: str, other: str) -> float:
        """Pooled WMAPE (%) of ``other`` over exactly the ops ``model`` projected, in every evaluated pair (NaN when
        there are none): what ``other`` scores on the ops ``model`` was scored on."""
        err = actual = 0.0
        for o in self.evaluated:
            assert o.evaluation is not None
            projected = o.evaluation.projected_s
            if model not in projected or other not in projected:
                continue
            ok = ~np.isnan(projected[model]) & ~np.isnan(projected[other])
            err += float(np.abs(o.evaluation.actual_s[ok] - projected[other][ok]).sum())
            actual += float(o.evaluation.actual_s[ok].sum())
        return 100.0 * err / actual if actual > 0 else float("nan")

    def all_notes(self) -> list[str]:
        """What the pairs could not give, then every evaluated pair's notes (``Evaluation.all_notes``) each once
        with the pairs it applies to (``pair_notes``): what ``nodecast evaluate DIR_A DIR_B`` prints after its
        tables and its page lists, as one pair's notes are."""
        notes = [f"{o.name} not evaluated: {o.reason}" for o in self.skipped]
        for label, names in (("A", self.unpaired_a), ("B", self.unpaired_b)):
            if names:
                notes.append(f"{plural(len(names), 'file')} only in {label}: {_listed(names)}")
        per_pair = {o.name: o.evaluation.all_notes() for o in self.evaluated if o.evaluation is not None}
        return notes + pair_notes(per_pair)

    def to_dict(self) -> dict[str, Any]:
        """Every value as plain Python (JSON-ready; errors in %, times in s)."""
        return {
            "dir_a": self.dir_a, "dir_b": self.dir_b, "pairs": len(self.outcomes), "evaluated": len(self.evaluated),
            "machines": self.machine_pairs(), "wmape": self.summary_table(), "pooled": self.pooled(),
            "errors": self.errors(),
            "skipped": [{"pair": o.name, "reason": o.reason} for o in self.skipped],
            "unpaired_a": self.unpaired_a, "unpaired_b": self.unpaired_b, "notes": self.all_notes(),
        }

    def summary_table(self) -> pd.DataFrame:
        """``summary()`` (all categories) with a ``machines`` column after the pair when pairs ran on different
        machines (what ``nodecast evaluate DIR_A DIR_B`` prints)."""
        table = self.summary()
        pairs = self.machine_pairs()
        if len(set(pairs.values())) > 1:
            table.insert(1, "machines", table["pair"].map(pairs).fillna(""))
        return table

    @property
    def evaluated(self) -> list[PairOutcome]:
        """The pairs that have an evaluation."""
        return [o for o in self.outcomes if o.evaluation is not None]

    def errors(self) -> pd.DataFrame:
        """Long table: one row per evaluated pair, model and category (plus ``all``): sums for pooling.

        Columns ``pair, model, category, ops, abs_error_s, actual_s, ape_sum, WMAPE, MAPE`` (``ape_sum``:
        the sum of per-op absolute percentage errors, for pooling MAPE; WMAPE and MAPE in %).
        """
        rows = []
        for o in self.evaluated:
            ev = o.evaluation
            assert ev is not None
            for model, p in ev.projected_s.items():
                ok = ~np.isnan(p)
                for cat in ("all", *sorted(set(ev.category[ok].tolist()))):
                    sel = ok if cat == "all" else ok & (ev.category == cat)
                    a = ev.actual_s[sel]
                    if not len(a):
                        continue
                    err = np.abs(a - p[sel])
                    rows.append({"pair": o.name, "model": model, "category": cat, "ops": int(sel.sum()),
                                 "abs_error_s": float(err.sum()), "actual_s": float(a.sum()),
                                 "ape_sum": float((100.0 * err / a).sum()),
                                 "WMAPE": float(100.0 * err.sum() / a.sum()), "MAPE": float(np.mean(100.0 * err / a))})
        return pd.DataFrame(rows, columns=["pair", "model", "category", "ops", "abs_error_s", "actual_s", "ape_sum",
                                           "WMAPE", "MAPE"])

    def summary(self, category: str = "all") -> pd.DataFrame:
        """WMAPE (%) per pair (rows, then ``all pairs`` pooled) and model (columns), over one category's ops."""
        e = self.errors()
        e = e[e["category"] == category]
        if e.empty:
            return pd.DataFrame(columns=["pair"])
        per_pair = e.assign(wmape=100.0 * e["abs_error_s"] / e["actual_s"]).pivot(
            index="pair", columns="model", values="wmape")
        pooled = e.groupby("model").agg(abs_error_s=("abs_error_s", "sum"), actual_s=("actual_s", "sum"))
        per_pair.loc["all pairs"] = 100.0 * pooled["abs_error_s"] / pooled["actual_s"]
        order = list(dict.fromkeys(e["model"]))
        return per_pair[order].reset_index().rename_axis(columns=None)

    def pooled(self) -> pd.DataFrame:
        """Per model and category, over every evaluated op of every pair: ops, WMAPE and MAPE (%)."""
        e = self.errors()
        g = e.groupby(["model", "category"], sort=False).agg(
            ops=("ops", "sum"), abs_error_s=("abs_error_s", "sum"), actual_s=("actual_s", "sum"),
            ape_sum=("ape_sum", "sum"), pairs=("pair", "nunique"))
        g["WMAPE"] = 100.0 * g["abs_error_s"] / g["actual_s"]
        g["MAPE"] = g["ape_sum"] / g["ops"]
        return g.reset_index()[["model", "category", "pairs", "ops", "WMAPE", "MAPE"]]


#: A number (with separators and decimals) and the word after it ("2 launches", "45.1 µs"): what may differ,
#: unit and number of the noun included, between the same note of two pairs.
_NUMBER = re.compile(r"\d[\d,.]*(?:\s*[^\W\d_]+)?")
#: Names a note lists before "and N more".
_LISTED = 5


def _listed(names: list[str]) -> str:
    """``"a, b, c, d, e and 3 more"``: at most ``_LISTED`` names."""
    more = len(names) - _LISTED
    return ", ".join(names[:_LISTED]) + (f" and {more:,} more" if more > 0 else "")


def pair_notes(per_pair: dict[str, list[str]]) -> list[str]:
    """The notes of many pairs (pair name -> its notes), each once, in the order they first appear, ending with
    the pairs it applies to: ``"... [all 3 pairs]"``, ``"... [2 of 3 pairs: a.csv, b.csv]"``.

    Notes that differ only in their numbers ("3 copies ... 1.07 ms" in one pair, "2 copies ... 45.1 µs" in
    another) are one note, shown with its first pair's numbers and saying that they differ by pair: a folder of
    hundreds of traces must not print its notes hundreds of times. One pair: its notes as they are."""
    total = len(per_pair)
    groups: dict[str, dict[str, list[str]]] = {}  # numbers masked -> note -> pairs
    for pair, notes in per_pair.items():
        for note in dict.fromkeys(str(n) for n in notes):
            groups.setdefault(_NUMBER.sub("#", note), {}).setdefault(note, []).append(pair)
    out = []
    for variants in groups.values():
        text, first_pairs = next(iter(variants.items()))
        if total == 1:
            out.append(text)
            continue
        pairs = list(dict.fromkeys(p for ps in variants.values() for p in ps))
        where = (f"all {total:,} pairs" if len(pairs) == total else
                 f"{len(pairs):,} of {total:,} pairs: {_listed(pairs)}")
        if len(variants) > 1:
            where += f"; the numbers differ by pair, these are {first_pairs[0]}'s"
        out.append(f"{text} [{where}]")
    return out


def pair_files(dir_a: str | Path, dir_b: str | Path) -> tuple[list[tuple[str, Path, Path]], list[str], list[str]]:
    """Files with the same name in both folders (sorted), and the names found in only one of them.

    Hidden files and sub-folders are not traces and are left out. InputError when a
    folder does not exist or the two share no file name.
    """
    folders = []
    for label, d in (("A", dir_a), ("B", dir_b)):
        p = Path(d)
        if not paths.is_dir(p, f"trace {label}"):
            raise InputError("not a folder", path=p, key=f"trace {label}",
                             hint="Give two folders of traces paired by file name, or two trace files")
        # A pair is labelled by its file name as text (``paths.as_text``): a name that is not UTF-8 goes into
        # tables, JSON and pages, none of which can encode its raw bytes.
        folders.append({paths.as_text(f.name): f for f in p.iterdir() if f.is_file() and not f.name.startswith(".")})
    a, b = folders
    common = sorted(set(a) & set(b))
    if not common:
        raise InputError(f"no file name is in both folders ({len(a)} files in A, {len(b)} in B)", path=dir_a,
                         hint="Pairs are made by file name: name each run B's trace as its run A's")
    return [(n, a[n], b[n]) for n in common], sorted(set(a) - set(b)), sorted(set(b) - set(a))


def evaluate_pairs(
    dir_a: str | Path,
    dir_b: str | Path,
    source: str | None = None,
    target: str | None = None,
    model_names: list[str] | None = None,
    kind: str | None = None,
    metrics: KernelMetrics | None = None,
    allow_gpu_mismatch: bool = False,
) -> PairsEvaluation:
    """Evaluate every pair of ``pair_files``: run A's trace projected from ``source`` onto ``target`` against run B's.

    ``source``/``target`` are machine specs (catalogue name, machine file,
    ``GPU[xN][@HOST]``); None picks each from the trace's GPU name
    (``nodecast.machines.resolve.resolve_source``), which also refuses a trace
    whose GPU is not the machine's unless ``allow_gpu_mismatch``. Machines are
    loaded once per distinct (spec, GPU name). ``metrics`` apply to every pair.
    """
    from nodecast.machines.resolve import resolve_source
    from nodecast.traces.load import load_trace

    pairs, only_a, only_b = pair_files(dir_a, dir_b)
    cache: dict[tuple[str | None, str, str], object] = {}

    def machine(trace, spec: str | None, option: str):  # noqa: ANN001, ANN202
        key = (spec, option, repr(sorted(trace.meta.gpus.items())))
        if key not in cache:
            cache[key] = resolve_source(trace, spec, allow_gpu_mismatch, option=option)
        return cache[key]

    outcomes = []
    for name, pa, pb in pairs:
        out = PairOutcome(name, pa, pb)
        try:
            a, b = load_trace(pa), load_trace(pb)
            src, tgt = machine(a, source, "--from"), machine(b, target, "--to")
            out.source, out.target = src.name, tgt.name  # type: ignore[attr-defined]
            out.evaluation = evaluate(a, b, src, tgt, model_names, kind, metrics)  # type: ignore[arg-type]
        except InputError as exc:
            out.reason = exc.message
        outcomes.append(out)
    return PairsEvaluation(outcomes, only_a, only_b, str(dir_a), str(dir_b))
