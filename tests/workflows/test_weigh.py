"""A forecast's notes weighed along B's critical path (src/nodecast/graph/weigh.py), on a hand-made path."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from nodecast import notes as nn
from nodecast.graph.opgraph import OpKind
from nodecast.workflows.weigh import weigh
from nodecast.models.base import ModelResult


def _forecast_parts():
    """Four ops (a kernel by roofline, a kernel kept, an HtoD copy by ahead, an API call) and a 10 s path: 4 s of
    API calls, 1 s of gaps, 2 s of the roofline kernel, 1 s of the kept kernel, 2 s of the copy."""
    graph = SimpleNamespace(ops={"kind": np.array([OpKind.KERNEL, OpKind.KERNEL, OpKind.COPY, OpKind.API])})
    names = ["roofline", "ahead", "source", "host"]
    costs = SimpleNamespace(
        model_names=names, model=np.array([0, 2, 1, 3], np.int16),
        results={"roofline": ModelResult("roofline", np.zeros(4), notes=[nn.Note("L2 unknown", nn.LEVELS_UNKNOWN)]),
                 "ahead": ModelResult("ahead", np.zeros(4), notes=["link"])},
        kept=lambda g: np.array([False, True, False, False]))
    path = SimpleNamespace(ops=np.array([3, 0, 1, 2]), op_time_s=np.array([4.0, 2.0, 1.0, 2.0]),
                           breakdown_s={"host: API calls": 4.0, "host: gaps between calls": 1.0, "kernels": 3.0,
                                        "copies: HtoD pinned": 2.0})
    return graph, costs, path


def test_each_note_is_weighed_by_what_it_covers_on_the_path():
    """Host work 5 of 10 s; a host assumed adds the copy (7 s); the kept kernel 1 s; the kernels of the model that
    lacks a cache level 2 s; a plain note stays unweighed. The share is in the text."""
    graph, costs, path = _forecast_parts()
    notes = [nn.Note("host kept", nn.HOST_TIME), nn.Note("host assumed", nn.HOST_ASSUMED),
             nn.Note("1 op kept", nn.OPS_KEPT), nn.Note("roofline: L2 unknown", nn.LEVELS_UNKNOWN),
             nn.Note("mismatch", nn.GPU_MISMATCH), "plain"]
    out = weigh(notes, graph, costs, path, 10.0)
    assert [nn.share(n) for n in out] == [0.5, 0.7, 0.1, 0.2, 0.5, None]
    assert out[0] == "host kept; host work on B's critical path: 5 s, 50.0 % of the forecast's end to end"
    assert [nn.severity(n) for n in out] == ["decisive"] * 5 + ["info"]
    assert weigh(notes, graph, costs, path, 0.0) == notes  # nothing to weigh by
