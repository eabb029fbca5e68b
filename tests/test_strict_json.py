"""``nodecast.strict_json``: every JSON file nodecast writes is JSON that any parser reads (NaN and infinities
written as null), and every writer goes through it."""

from __future__ import annotations

import io
import json
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from nodecast.strict_json import dumps, finite


def strict_loads(text: str):
    """``json.loads`` as JSON.parse reads: the bare words NaN, Infinity and -Infinity are errors."""
    def refuse(word: str):
        raise ValueError(f"not JSON: {word}")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_numbers_become_null_at_any_depth():
    """NaN, +/-inf (Python and numpy floats, inside numpy arrays), pandas NA/NaT and numpy NaT become null inside
    dicts, lists and tuples; finite numbers, numpy integers and booleans become plain numbers; text stays text."""
    doc = {
        "nan": math.nan, "inf": math.inf, "-inf": -math.inf, "ok": 1.5,
        "np": [np.float64("nan"), np.float32("inf"), np.float64(-np.inf), np.float32(0.5), np.int64(7), np.bool_(True)],
        "array": np.array([[1.0, np.nan], [np.inf, -2.0]]),
        "pandas": (pd.NA, pd.NaT, None),
        "nat": np.datetime64("NaT"),
        "deep": {"a": [{"b": (math.nan, [np.array([np.nan])])}]},
        "words": ["NaN", "Infinity"],
    }
    want = {
        "nan": None, "inf": None, "-inf": None, "ok": 1.5,
        "np": [None, None, None, 0.5, 7, True],
        "array": [[1.0, None], [None, -2.0]],
        "pandas": [None, None, None],
        "nat": None,
        "deep": {"a": [{"b": [None, [[None]]]}]},
        "words": ["NaN", "Infinity"],
    }
    assert strict_loads(dumps(doc)) == want
    assert finite(doc) == want


def test_finite_documents_are_written_as_json_writes_them():
    """A document without non-finite numbers is byte for byte what json.dumps writes (the simulator's files keep
    their layout), whatever the options."""
    doc = {"b": [1, 2.5, "x", None, True], "a": {"z": 1e-300, "y": (3, 4)}}
    for options in ({}, {"indent": 2, "sort_keys": True}, {"separators": (",", ":")}):
        assert dumps(doc, **options) == json.dumps(doc, **options)


def test_a_non_finite_number_out_of_the_rules_reach_fails_loudly():
    """json.dumps runs with allow_nan=False: a NaN the rule leaves alone (a dict key) raises instead of writing
    invalid JSON."""
    with pytest.raises(ValueError, match="JSON compliant"):
        dumps({math.nan: 1})


def test_the_callers_default_still_writes_other_objects():
    """``default=`` still handles what JSON has no type for (the CUPTI injector's enum-like values)."""
    class Kind:
        def __int__(self) -> int:
            return 3

    assert strict_loads(dumps({"kind": Kind(), "t": math.nan}, default=int)) == {"kind": 3, "t": None}
    with pytest.raises(TypeError):
        dumps({"kind": Kind()})


# ---------------------------------------------------------------- every writer goes through the rule
def test_report_documents_write_null(tmp_path):
    """``report.files.dumps`` (what --json prints) and ``write_json`` (--json FILE) write null for NaN, infinities,
    numpy and pandas missing values, in headline numbers and tables alike."""
    from nodecast.report import files
    from nodecast.headline import Number

    doc = {"headline": [Number("x", math.nan, "s", low=-math.inf, high=math.inf)],
           "rows": pd.DataFrame({"a_s": [1.0, np.nan, np.inf], "b": ["k", None, pd.NA]}),
           "ratio": np.float64("nan")}
    want = {"headline": [{"label": "x", "value": None, "unit": "s", "low": None, "high": None, "note": ""}],
            "rows": [{"a_s": 1.0, "b": "k"}, {"a_s": None, "b": None}, {"a_s": None, "b": None}],
            "ratio": None}
    assert strict_loads(files.dumps(doc)) == want
    assert strict_loads(files.write_json(doc, tmp_path / "doc.json").read_text()) == want


def _empty_sim_result(**changes):
    """A simulation with no task: makespan 0, so GFlop/s is NaN; and an infinite link bandwidth (the simulator
    refuses one, the writer must not write it bare either)."""
    from nodecast.runtime.outputs import LinkStats, SimResult

    fields = {"app": "empty", "platform": "p", "scheduler": "dmda", "n_tasks": 0, "makespan_s": 0.0,
              "total_flops": 0.0, "workers": [], "links": [LinkStats("l", math.inf, 0.0, 0.0)], "nodes": [],
              "transfers": {}, "events": 0, "trace": {"tasks": [], "transfers": [], "evictions": []}}
    return SimResult(**{**fields, **changes})


def test_simulate_summary_and_trace_write_null(tmp_path):
    """``simulate --json`` (the run's summary) and ``--trace`` (Chrome trace): GFlop/s of an empty run (NaN) and an
    infinite bandwidth are null."""
    from nodecast.report.files.simulate import write_json
    from nodecast.runtime.outputs import write_chrome_trace

    result = _empty_sim_result()
    summary = strict_loads(write_json(result, tmp_path / "run.json").read_text())
    assert summary["gflops"] is None and summary["links"][0]["bandwidth_bps"] is None
    write_chrome_trace(result, tmp_path / "trace.json")
    assert strict_loads((tmp_path / "trace.json").read_text())["otherData"]["gflops"] is None


def test_forecast_chrome_trace_writes_null(tmp_path, monkeypatch):
    """``replay/forecast --trace``: an event time that is not finite is written null."""
    from nodecast.workflows import export

    monkeypatch.setattr(export, "chrome_events", lambda result: [{"ph": "X", "pid": 1, "tid": 1, "name": "k",
                                                                   "ts": math.nan, "dur": math.inf}])
    result = SimpleNamespace(graph=SimpleNamespace(source="t.sqlite", origin_ns=0))
    doc = strict_loads(export.write_chrome_trace(result, tmp_path / "trace.json").read_text())
    assert doc["traceEvents"][0]["ts"] is None and doc["traceEvents"][0]["dur"] is None


def test_record_injector_lines_write_null():
    """The CUPTI injector's JSON lines (status lines, records) are strict JSON too."""
    from nodecast.record import _inject

    out = io.StringIO()
    _inject._write(out, {"status": "done", "t": math.nan, "n": 2})
    assert out.getvalue().startswith(_inject.STATUS_PREFIX)
    assert strict_loads(out.getvalue()) == {"status": "done", "t": None, "n": 2}
