"""Tests for nodecast.graph.opgraph: the graph's names for its op kinds, as its outputs write them."""

from __future__ import annotations

import numpy as np

from nodecast.graph.opgraph import OpKind, kind_codes, kind_label


def test_outputs_keep_the_graph_names_and_codes():
    """Ops tables and Chrome traces name and number op kinds as they did before traces and graphs shared one
    vocabulary (kernel 0, copy 1, memset 2, api 3, wait 4), so that files written before read the same."""
    kinds = np.array([OpKind.WAIT, OpKind.KERNEL, OpKind.API, OpKind.COPY, OpKind.MEMSET], np.int8)
    codes, labels = kind_codes(kinds)
    assert labels == ["kernel", "copy", "memset", "api", "wait"]
    assert codes.tolist() == [4, 0, 3, 1, 2] and codes.dtype == np.int8
    assert [kind_label(k) for k in kinds] == ["wait", "kernel", "api", "copy", "memset"]
