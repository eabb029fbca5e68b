"""Running out of memory is one line that says how large the trace was and what to do (issue 23, item 7).

A 9.8 M-op trace under a 4 GiB limit ended in numpy's array-allocation
traceback. Each test makes a real allocation failure (numpy's
``_ArrayMemoryError`` from an impossible array, pyarrow's
``ArrowMemoryError``) at one step of a command and checks the line, the exit
code, and that no traceback and no output file is left.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nodecast.cli import main
from nodecast.traces.load import load_trace

SAMPLE = "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"


def _allocate_too_much(*_: object, **__: object) -> None:
    np.empty(1 << 56, np.uint8)  # 64 PiB: numpy raises _ArrayMemoryError, a MemoryError


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture(scope="module")
def sample_ops() -> int:
    return len(load_trace(SAMPLE))


def test_a_forecast_out_of_memory_is_one_line_with_the_trace_size(monkeypatch, capsys, tmp_path, sample_ops):
    """The replay on B runs out: exit 2, one line naming the trace, its GPU ops and what to do; no JSON written."""
    import nodecast.workflows.forecast as forecast_module

    monkeypatch.setattr(forecast_module, "forecast", _allocate_too_much)
    doc = tmp_path / "f.json"
    assert main(["forecast", SAMPLE, "--to", "h100-sxm5-server", "--json", str(doc)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"nodecast: error: {SAMPLE}: out of memory with {sample_ops:,} GPU ops")
    assert "GiB" in line and "more memory" in line
    assert not doc.exists()


def test_outputs_finished_before_memory_ran_out_are_removed(monkeypatch, capsys, tmp_path):
    """The JSON is written, then the page runs out: the JSON goes too (it would look like a complete run's)."""
    import nodecast.report.html.forecast as page

    monkeypatch.setattr(page, "forecast_page", _allocate_too_much)
    doc, html = tmp_path / "f.json", tmp_path / "f.html"
    assert main(["forecast", SAMPLE, "--to", "h100-sxm5-server", "--json", str(doc), "--html", str(html)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "out of memory" in line and line.endswith(f"Removed {doc}, written before memory ran out")
    assert list(tmp_path.iterdir()) == []


def test_running_out_while_reading_names_the_ops_the_reader_counted(monkeypatch, capsys, sample_ops):
    """The reader knows its op count before it fills and sorts the columns: the line gives it."""
    import nodecast.traces._common as common

    monkeypatch.setattr(common, "finish", _allocate_too_much)
    assert main(["inspect", SAMPLE]) == 2
    assert f"out of memory with {sample_ops:,} GPU ops" in _one_line(capsys.readouterr().err)


def test_an_arrow_allocation_failure_while_writing_the_op_table_is_the_same_line(monkeypatch, capsys, tmp_path):
    """pyarrow's ArrowMemoryError (a MemoryError) while the Parquet op table is written: one line, no file left."""

    def fail(*_: object, **__: object) -> None:
        raise pa.ArrowMemoryError("malloc of size 1073741824 failed")

    monkeypatch.setattr(pq.ParquetWriter, "write_table", fail)
    assert main(["forecast", SAMPLE, "--to", "h100-sxm5-server", "-o", str(tmp_path / "ops.parquet")]) == 2
    assert "out of memory" in _one_line(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []


def test_what_a_memory_limit_makes_of_a_thread_or_a_library_load_is_the_same_line(monkeypatch, capsys):
    """Under ``ulimit -v`` a thread cannot map its stack and a library its segments: those are the same line too."""
    import nodecast.workflows.forecast as forecast_module
    from nodecast.out_of_memory import ran_out

    def no_thread(*_: object, **__: object) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(forecast_module, "forecast", no_thread)
    assert main(["forecast", SAMPLE, "--to", "h100-sxm5-server"]) == 2
    assert "out of memory" in _one_line(capsys.readouterr().err)
    try:
        try:
            raise OSError("libllvmlite.so: failed to map segment from shared object")
        except OSError:
            raise OSError("Could not find/load shared object file 'libllvmlite.so'") from None
    except OSError as exc:
        assert ran_out(exc)  # the cause is kept as the context
    assert not ran_out(RuntimeError("another error")) and not ran_out(ValueError("x"))


def test_the_line_says_how_much_memory_the_process_may_use(monkeypatch):
    """Under ``ulimit -v`` the line gives the limit, and an estimate of the need that grows with the ops."""
    import resource

    from nodecast import out_of_memory

    monkeypatch.setattr(resource, "getrlimit", lambda _: (4 << 30, resource.RLIM_INFINITY))
    out_of_memory.note_file("big.sqlite")
    out_of_memory.note_gpu_ops(9_800_000)
    message = out_of_memory.error().message
    assert message.startswith("big.sqlite: out of memory with 9,800,000 GPU ops")
    assert "4.0 GiB allowed (ulimit -v)" in message
    need = out_of_memory.need_bytes(9_800_000)
    assert need > 4 << 30 and out_of_memory.need_bytes(19_600_000) > need
    assert f"{need / 2**30:.1f} GiB" in message


def test_before_any_op_is_counted_the_line_gives_the_file_size(tmp_path):
    """Out of memory while a reader parses (a JSON trace) and before it counts: the file's size instead."""
    from nodecast import out_of_memory

    trace = tmp_path / "t.json"
    trace.write_bytes(b"x" * 3_000_000)
    out_of_memory.note_file(trace)
    message = out_of_memory.error().message
    assert message.startswith(f"{trace}: out of memory reading it (3.0 MB; ")
