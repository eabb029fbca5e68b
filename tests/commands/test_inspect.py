"""CLI tests of inspect's printed tables on real traces: units and number formats."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nodecast.cli import main

KERNEL_ZOO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "kernel-zoo"


def test_inspect_prints_bytes_without_exponent(capsys):
    """A real kernel-zoo run copying 1,008 MiB prints '1,008 MiB', not '1.01e+03 MiB' (issue 10, item 8)."""
    path = KERNEL_ZOO / "GTX-680" / "subSeqMax-264241152.csv"
    if not path.is_file():
        pytest.skip(f"{path} is absent (real inputs live beside the repository, not in a clone)")
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"HtoD host memory unrecorded │\s+1 │ 1,008 MiB │", out)  # nvprof CSV: no memory kinds
    assert not re.search(r"\de[+-]\d", out)


def test_inspect_prints_bandwidths_without_exponent(shared_traces, capsys):
    """DtoD copies at 1,946 GB/s in a real nvprof trace print '1,946', not '1.95e+03'."""
    assert main(["inspect", str(shared_traces / "nvprof_tensorflow-cnn_gtx-titan-x.nvvp")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"DtoD\s+│\s+26 │ 37\.5 MiB │ .* │ 1,946 │", out)
    assert not re.search(r"\de[+-]\d", out)
