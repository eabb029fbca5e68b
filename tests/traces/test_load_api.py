"""Tests for nodecast.traces.load.load_api: the host records of real traces of every format (../shared/data/traces)."""

from __future__ import annotations

import numpy as np
import pytest

from nodecast.traces import cupti_cbid
from nodecast.traces.api import ApiKind, Domain
from nodecast.traces.load import load_api as read_api


def test_nsys_runtime_calls_with_sync_streams(shared_traces):
    """The nsys 4-stream vector add has its 825 runtime calls, and each stream sync names its stream."""
    api = read_api(shared_traces / "nsys_vectoradd-streams_t4.sqlite")
    assert len(api) == 825
    kinds = api.kinds()
    assert int((kinds == ApiKind.LAUNCH).sum()) == 200
    syncs = kinds == ApiKind.STREAM_SYNC
    assert sorted(api["stream"][syncs].tolist()) == [13, 14, 15, 16]
    assert api.meta.null_streams == {0: 7}
    assert api.meta.stream_flags[13] == "blocking" and api.meta.stream_flags[11] == "non-blocking"
    assert api.meta.copy_engines == {0: 3}  # Tesla T4: TARGET_INFO_GPU.asyncEngines


def test_nsys_event_records_carry_stream_and_event(shared_traces):
    """cudaEventRecord calls get their stream and event from CUPTI_ACTIVITY_KIND_CUDA_EVENT."""
    api = read_api(shared_traces / "nsys_sptrsv-levelset-la_t4.sqlite")
    rec = api.kinds() == ApiKind.EVENT_RECORD
    assert api["stream"][rec].tolist() == [7, 7]
    assert sorted(api["event"][rec].tolist()) == [1, 2]


def test_nvprof_names_come_from_callback_ids(shared_traces):
    """nvprof stores cbids: LAMMPS launches 3,614 kernels through both APIs (cbids 211 and 307)."""
    api = read_api(shared_traces / "nvprof_ahead-lammps_summit-v100.nvvp")
    names = np.array(api.names)[api["name_id"]]
    assert int((names == "cuLaunchKernel").sum()) == 1166
    assert int((names == "cudaLaunchKernel").sum()) == 2448
    assert int((api["domain"] == Domain.DRIVER).sum()) == 17945
    assert cupti_cbid.driver_name(307) == "cuLaunchKernel"
    assert cupti_cbid.runtime_name(211) == "cudaLaunchKernel"
    assert cupti_cbid.runtime_name(9999) == "cudaRuntime#9999"


def test_kineto_stream_waits_name_their_event_record(shared_traces):
    """A Kineto "Stream Wait Event" links the wait to the cudaEventRecord it waits for."""
    api = read_api(shared_traces / "kineto_alexnet-benchmark_a100.json.gz")
    kinds = api.kinds()
    waits = (kinds == ApiKind.STREAM_WAIT_EVENT) & (api["event"] >= 0)
    assert int(waits.sum()) == 20
    records = api["correlation"][kinds == ApiKind.EVENT_RECORD]
    assert set(api["event"][waits].tolist()) <= set(records.tolist())
    assert int((api["domain"] == Domain.CPU_OP).sum()) > 0


def test_kineto_fwdbwd_flows_are_kept(shared_traces):
    """The V100 training trace's 905 forward-backward flows are kept as host dependencies."""
    api = read_api(shared_traces / "kineto_training-rank0_v100.json.gz")
    assert api.meta.host_flows.shape == (905, 4)


def test_csv_has_no_api_records(shared_traces):
    """An nvprof GPU-trace CSV has no host records, and the table says so."""
    api = read_api(shared_traces / "nvprof-gputrace-csv_vectoradd_k40c.csv")
    assert len(api) == 0
    assert "no host API records" in api.meta.notes[0]


def _api_end_before_start(shared_traces, tmp_path, name: str) -> tuple[str, int]:
    """A copy of a real SQLite trace whose first runtime call ends 100 ns before it starts; its rowid."""
    import shutil
    import sqlite3

    path = tmp_path / name
    shutil.copy(shared_traces / name, path)
    path.chmod(0o644)
    with sqlite3.connect(path) as con:
        (rowid,) = con.execute("SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()
        con.execute('UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET "end" = start - 100 WHERE rowid = ?', (rowid,))
    con.close()
    return str(path), rowid


@pytest.mark.parametrize(("name", "command"), [("nvprof_vectoradd-1M_t4.nvvp", "replay"),
                                               ("nsys_vectoradd-streams_t4.sqlite", "forecast")])
def test_api_call_ending_before_it_starts_is_one_line(shared_traces, tmp_path, capsys, name, command):
    """A runtime call whose end precedes its start (no profiler writes one) is refused in one line that
    names the file, the table and the row, like a GPU op's; it was a ValueError traceback from the replay."""
    from nodecast.cli import main

    path, rowid = _api_end_before_start(shared_traces, tmp_path, name)
    extra = ["--to", "dgx-a100"] if command == "forecast" else []
    assert main([command, path, *extra]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert path in err and "CUPTI_ACTIVITY_KIND_RUNTIME" in err and f"rowid {rowid}" in err
    assert "1 of " in err and "-100 ns" in err
