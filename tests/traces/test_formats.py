"""Tests for nodecast.traces.formats: one reader per format, one registry line each, the Trace and its API calls
read together (``load_run``)."""

from __future__ import annotations

import numpy as np

from nodecast.traces import formats
from nodecast.traces.api import ApiCalls
from nodecast.traces.load import detect_format, load_api, load_run, load_trace
from nodecast.traces.reader import TEXT, Reader, without_api
from nodecast.traces.trace import Trace, TraceMeta

VECTORADD = "nsys_vectoradd-streams_t4.sqlite"


def test_every_format_is_one_reader():
    """Each format nodecast reads is one registered reader with both sides, named as detect_format names it."""
    names = [r.name for r in formats.READERS]
    assert sorted(names) == ["arrow", "kineto", "nsys", "nvprof", "nvprof-csv", "op-table", "parquet"]
    assert all(isinstance(r, Reader) for r in formats.READERS)


def test_load_run_reads_the_trace_and_its_api_calls_together(shared_traces):
    """``load_run`` gives what ``load_trace`` and ``load_api`` give, from one detection of the format."""
    path = shared_traces / VECTORADD
    trace, api = load_run(path)
    alone, calls = load_trace(path), load_api(path)
    assert trace.meta.source == alone.meta.source == api.meta.source == str(path)
    assert all(np.array_equal(trace[c], alone[c]) for c in ("kind", "start_ns", "end_ns", "stream"))
    assert len(api) == len(calls) == 825 and np.array_equal(api["start_ns"], calls["start_ns"])
    sample = "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"
    run = load_run(sample)
    assert run.trace.meta.source == run.api.meta.source == sample


def test_a_new_format_is_one_reader_and_one_registry_line(tmp_path, monkeypatch):
    """A format nodecast did not read becomes readable by one Reader and one more entry in READERS."""

    def read_toy(path):
        cols = {"kind": np.zeros(1, np.int8), "start_ns": np.array([0]), "end_ns": np.array([1000])}
        return Trace.from_columns(cols, [], TraceMeta(source=str(path), format="toy"))

    toy = Reader("toy", lambda probe: probe.container == TEXT and probe.text.startswith("TOY TRACE"), read_toy,
                 without_api("toy", "a toy trace"))
    monkeypatch.setattr(formats, "READERS", (*formats.READERS, toy))
    path = tmp_path / "run.toy"
    path.write_text("TOY TRACE\n")
    assert detect_format(path) == "toy"
    trace, api = load_run(path)
    assert len(trace) == 1 and trace.meta.format == "toy"
    assert isinstance(api, ApiCalls) and len(api) == 0
    assert api.meta.notes == ["a toy trace holds no host API records: GPU ops are placed by the recorded-offset "
                              "fallback"]
