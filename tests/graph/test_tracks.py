"""Tracks of an operation graph (src/nodecast/graph/tracks.py): GPU streams and host threads, never confused."""

from __future__ import annotations

import json

from nodecast.cli import main
from nodecast.graph.build import build_graph
from nodecast.graph.opgraph import OpKind
from nodecast.graph.tracks import tracks
import importlib.resources

from nodecast.traces.load import sample_file

TITAN = "nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"


def test_negative_thread_ids_stay_host_threads():
    """nvprof writes Titan's host thread as -1368467232: its API calls are a host thread, not 'GPU 0 stream ...'."""
    with importlib.resources.as_file(sample_file(TITAN)) as path:
        g = build_graph(path)
    index, labels = tracks(g)
    host = g.ops["kind"] > OpKind.MEMSET
    assert set(labels[i] for i in index[host]) == {"host thread -1368467232"}
    assert all(labels[i].startswith("GPU 0 stream ") for i in index[~host])


def test_chrome_trace_names_the_host_thread(tmp_path):
    """The exported Chrome trace (forecast --trace) names the same tracks."""
    out = tmp_path / "t.json"
    assert main(["forecast", f"sample:{TITAN}", "--from", "titan", "--to", "summit", "--trace", str(out)]) == 0
    names = {e["args"]["name"] for e in json.loads(out.read_text())["traceEvents"] if e.get("name") == "thread_name"}
    assert "host thread -1368467232" in names
    assert not any(n.startswith("GPU") and n.endswith("1368467231") for n in names)
