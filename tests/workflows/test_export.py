"""Tests for nodecast.workflows.export.write_ops: the per-op table, written a block of rows at a time."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
import pytest

from nodecast.workflows import export
from nodecast.workflows.forecast import forecast_trace
from nodecast.workflows.replay import replay_trace

SAMPLE = "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"


@pytest.fixture(scope="module")
def results():
    return forecast_trace(SAMPLE, "h100-sxm5-server"), replay_trace(SAMPLE)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_table_written_in_blocks_reads_back_as_the_whole_table(results, tmp_path, monkeypatch, suffix):
    """Blocks of 1,000 rows (the sample's 6,339 ops: 7 blocks, the last one short) give the table ops_table() gives:
    same rows, columns, dtypes and values; Parquet with one row group per block."""
    monkeypatch.setattr(export, "OPS_BLOCK_ROWS", 1000)
    for result in results:
        path = export.write_ops(result, tmp_path / f"ops{suffix}")
        whole = result.ops_table()
        assert len(whole) == len(result.graph) > 6000
        if suffix == ".parquet":
            assert pq.ParquetFile(path).metadata.num_row_groups == 7
            pd.testing.assert_frame_equal(pd.read_parquet(path), whole, check_exact=True)
        else:
            whole.to_csv(tmp_path / "whole.csv", index=False)
            assert path.read_bytes() == (tmp_path / "whole.csv").read_bytes()


def test_ops_table_rows_are_the_slice_of_the_whole_table(results):
    """ops_table(rows) is ops_table()'s rows ``rows``, index aside."""
    for result in results:
        whole, part = result.ops_table(), result.ops_table(slice(1000, 2500))
        pd.testing.assert_frame_equal(part, whole.iloc[1000:2500].reset_index(drop=True), check_exact=True)
