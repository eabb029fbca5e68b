"""``nodecast.workflows.collectives``: one collective swept over sizes on one node or several."""

from __future__ import annotations

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.machines import load_machine
from nodecast.traces.op_classes import DType, OpClass
from nodecast.workflows.collectives import COLUMNS, collectives


def test_rows_per_node_and_size_with_nccl_tests_bandwidths():
    """Two nodes, sizes 1 KiB to 1 GiB: one row per node and size; algbw = size / time, busbw = algbw x 2(n-1)/n."""
    nodes = [load_machine("dgx-a100"), load_machine("h100-sxm5-server")]
    r = collectives(nodes, "all_reduce", "1KiB:1GiB", "bf16")
    assert list(r.table.columns) == list(COLUMNS)
    assert len(r.table) == 2 * 21 and r.names == ["dgx-a100", "h100-sxm5-server"]
    np.testing.assert_allclose(r.table["algbw_bps"], r.table["size_bytes"] / r.table["time_s"])
    np.testing.assert_allclose(r.table["busbw_bps"], r.table["algbw_bps"] * 2 * 7 / 8)
    assert (r.table["elements"] == r.table["size_bytes"] // 2).all()
    wide = r.wide()
    assert wide.loc[2**30, "h100-sxm5-server"] > wide.loc[2**30, "dgx-a100"]
    assert r.headline()[0].unit == "B/s"


def test_group_and_split_collectives_round_to_whole_elements_per_rank():
    """all_gather on 4 GPUs in bf16: each rank's part holds whole elements (multiples of 8 B); 4 B is dropped."""
    r = collectives([load_machine("dgx-a100")], OpClass.ALL_GATHER, np.array([4, 8, 12, 1024]), DType.BF16, gpus=4)
    assert r.table["size_bytes"].tolist() == [8, 1024]
    assert r.table["gpus"].unique().tolist() == [4]
    assert any("rounded down" in n for n in r.notes) and any("left out" in n for n in r.notes)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"gpus": 16}, "group of 16 GPUs on a node of 8"),
    ({"gpus": 1}, "at least 2 GPUs"),
    ({"sizes": np.array([3, 1024])}, "not a whole number of bf16 elements"),
    ({"op": "gemm"}, "unknown collective 'gemm'"),
    ({"dtype": "int4"}, "unknown NCCL data type 'int4'"),
])
def test_bad_input_is_one_line(kwargs, match):
    """A group beyond the node, a size that splits an element, an op or type NCCL lacks: InputError, one line."""
    args = {"op": "all_reduce", "sizes": "8B:1MiB", "dtype": "bf16", **kwargs}
    with pytest.raises(InputError, match=match) as err:
        collectives([load_machine("dgx-a100")], **args)
    assert "\n" not in str(err.value)
