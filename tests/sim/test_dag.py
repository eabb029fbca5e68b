"""Task graphs: implicit dependencies, the DAG file format, the applications."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodecast.errors import InputError
from nodecast.sim.apps import cholesky, lu
from nodecast.sim.dag import RW, R, W, TaskGraph, load_dag


def test_sequential_consistency_dependencies():
    """Readers wait for the last writer; a writer waits for the readers since (not for the old writer)."""
    g = TaskGraph()
    a = g.add_data("A", 8)
    w0 = g.add_task("k", [(a, W)])
    r1 = g.add_task("k", [(a, R)])
    r2 = g.add_task("k", [(a, R)])
    w3 = g.add_task("k", [(a, RW)])
    assert g.preds[r1] == [w0] and g.preds[r2] == [w0]
    assert sorted(g.preds[w3]) == [r1, r2]
    assert g.succs[w0] == [r1, r2]


def test_cholesky_structure_matches_starpu():
    """Cholesky with 4 blocks has 20 tasks, StarPU's priorities and its wont_use hints."""
    g = cholesky(960 * 4)
    assert g.n_tasks == 4 + 6 + 4 + 6
    names = g.names
    assert names[:3] == ["POTRF(0)", "TRSM(1,0)", "TRSM(2,0)"]
    assert g.priority[names.index("TRSM(1,0)")] == 5 and g.priority[names.index("TRSM(2,0)")] == 0
    assert g.priority[names.index("SYRK(1,0)")] == 5
    assert g.async_ok[names.index("POTRF(1)")] is False
    assert g.size_bytes[names.index("GEMM(2,1,0)")] == 3 * 960 * 960 * 4
    assert g.total_flops() == pytest.approx((3840**3) / 3 + 3840**2 / 2 + 3840 / 6)
    assert len(g.wont_use) == 4 + 6


def test_cholesky_72000_has_73150_tasks():
    """The benchmark's Cholesky (75 blocks of 960) has 73 150 tasks."""
    assert cholesky(72000).n_tasks == 73150


def test_lu_structure_matches_starpu():
    """LU with 3 blocks: GETRF, TRSM_LL/TRSM_RU pairs, GEMMs; nominal 2n^3/3."""
    g = lu(960 * 3, precision="double")
    assert g.n_tasks == 3 + 2 * (2 + 1) + (4 + 1)
    assert g.kernels[g.kernel[0]] == "starpu_dlu_lu_model_getrf"
    assert g.size_bytes[0] == 960 * 960 * 8
    assert g.total_flops() == pytest.approx(2 * 2880**3 / 3)


def test_block_size_must_divide_matrix():
    """A block that does not divide the matrix is one InputError with a hint."""
    with pytest.raises(InputError, match="block size 960 does not divide matrix size 10000"):
        cholesky(10000)


def _write(tmp_path, doc):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc))
    return path


def test_dag_file_round_trip(tmp_path):
    """A graph written in the DAG format loads back with the same tasks and dependencies."""
    g = cholesky(960 * 3)
    g2 = load_dag(_write(tmp_path, g.to_json()))
    assert g2.names == g.names and g2.preds == g.preds and g2.priority == g.priority
    assert g2.total_flops() == g.total_flops() and g2.wont_use == g.wont_use


def test_cyclic_dag_file_is_rejected(tmp_path):
    """Explicit dependencies that close a cycle are one InputError naming the tasks on it."""
    doc = {
        "data": [{"name": "A", "size_bytes": 4}],
        "tasks": [
            {"name": "a", "kernel": "k", "access": [["A", "R"]], "deps": ["b"]},
            {"name": "b", "kernel": "k", "access": [["A", "R"]], "deps": ["a"]},
        ],
    }
    with pytest.raises(InputError, match="cycle: .*a.*b"):
        load_dag(_write(tmp_path, doc))


def test_reading_unwritten_data_is_allowed_and_noted(tmp_path):
    """A task reading data nobody wrote is fine: the data starts in host memory, and a note says so."""
    doc = {"data": [{"name": "A", "size_bytes": 4}], "tasks": [{"kernel": "k", "access": [["A", "R"]]}]}
    g = load_dag(_write(tmp_path, doc))
    assert g.initial_data() == [0]
    assert any("start valid in host memory" in n for n in g.notes)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"data": [], "tasks": [{"kernel": "k", "access": [["B", "R"]]}]}, "unknown data 'B'"),
        ({"data": [{"name": "A", "size_bytes": 4}], "tasks": [{"kernel": "k", "access": [["A", "X"]]}]}, "mode must be R, W or RW"),
        ({"data": [{"name": "A", "size_bytes": -1}], "tasks": [{"kernel": "k"}]}, "size_bytes must be an integer"),
        ({"data": [], "tasks": []}, "must be a non-empty list"),
        ({"data": [], "tasks": [{"kernel": "k", "deps": ["nope"]}]}, "unknown task 'nope'"),
    ],
)
def test_bad_dag_files_name_the_key(tmp_path, doc, message):
    """Each malformed DAG file is one InputError naming the key at fault."""
    with pytest.raises(InputError, match=message) as info:
        load_dag(_write(tmp_path, doc))
    assert str(tmp_path / "g.json") in info.value.message


def test_non_json_file_is_an_input_error(tmp_path):
    """A file that is not JSON reports the line."""
    path = tmp_path / "g.json"
    path.write_text("{ nope")
    with pytest.raises(InputError, match="not valid JSON"):
        load_dag(path)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.sampled_from([R, W, RW])), min_size=1, max_size=40))
def test_dependencies_respect_submission_order(accesses):
    """Implicit dependencies always point to earlier tasks, so the graph is acyclic."""
    g = TaskGraph()
    for i in range(5):
        g.add_data(f"d{i}", 8)
    for h, m in accesses:
        g.add_task("k", [(h, m)])
    for t, preds in enumerate(g.preds):
        assert all(p < t for p in preds)
    g.check_acyclic()


def test_graph_builders_pause_the_collector_and_restore_it():
    import gc

    from nodecast.errors import InputError
    from nodecast.sim.apps import cholesky
    from nodecast.sim.dag import paused_gc

    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(InputError):
        cholesky(1000, 960)  # the block does not divide: the collector comes back on the error path too
    assert gc.isenabled()
    gc.disable()
    try:
        cholesky(1920, 960)
        assert not gc.isenabled()  # a caller's disabled collector stays disabled
    finally:
        gc.enable()


# -- hand-edited DAG files (issue 10, item 9): one field of a Cholesky DAG written by to_json, changed ----------

def _edited_cholesky(tmp_path, key: str, text: str):
    """The DAG file of a 2x2-tile Cholesky (to_json, the documented format) with top-level ``key`` set to the JSON
    ``text`` (``NaN``, ``null``... as a hand edit would write them)."""
    doc = cholesky(960 * 2).to_json()
    assert key in doc
    doc[key] = "__EDITED__"
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc).replace('"__EDITED__"', text))
    return path


@pytest.mark.parametrize(("text", "reason"), [
    ('"2.4e9"', r"'2\.4e9' is not a number"),
    ("null", r"is empty \(null\)"),
    ("[1, 2]", "is a list, not a number"),
    ('{"flops": 1}', "is an object, not a number"),
    ("true", r"is a boolean \(true\), not a number"),
    ("NaN", r"nan is not a number \(NaN\)"),
    ("Infinity", "inf is infinite"),
    ("-1e9", r"-1000000000\.0 is out of range \(must be >= 0\)"),
])
def test_bad_nominal_flops_is_one_line(tmp_path, text, reason):
    """nominal_flops as text, null, a list, an object, NaN or negative names the key (text, null, lists and objects
    were ValueError/TypeError tracebacks; NaN and negative counts were accepted into the GFlop/s figures)."""
    path = _edited_cholesky(tmp_path, "nominal_flops", text)
    with pytest.raises(InputError, match=rf"^{path}: nominal_flops: {reason}"):
        load_dag(path)


@pytest.mark.parametrize(("text", "got"), [("3", r"a number \(3\)"), ("null", "null"), ("false", "false"),
                                           ('"A"', r"a string \('A'\)"), ('{"after": "t"}', "an object")])
def test_wont_use_that_is_not_a_list_is_one_line(tmp_path, text, got):
    """wont_use as a number, null, a boolean, a string or an object names the key (it was a TypeError traceback,
    or, for a string or an object, a misleading 'needs an existing task')."""
    path = _edited_cholesky(tmp_path, "wont_use", text)
    expected = rf"^{path}: wont_use: must be a list of {{after, data}} objects \(got {got}\)"
    with pytest.raises(InputError, match=expected):
        load_dag(path)


def test_edited_cholesky_without_edits_loads(tmp_path):
    """The file the edits start from loads, with its nominal FLOP count and its wont_use hints."""
    path = tmp_path / "g.json"
    path.write_text(json.dumps(cholesky(960 * 2).to_json()))
    g = load_dag(path)
    assert g.nominal_flops == cholesky(960 * 2).nominal_flops > 0 and len(g.wont_use) == 3


@pytest.mark.parametrize(("footprint", "reason"), [
    ("-1f", r"'-1f' is out of range \(must be >= 0 and <= 4,294,967,295\)"),
    ("1ffffffff", r"'1ffffffff' is out of range"),
    ("zz", r"'zz' is not a base-16 integer"),
])
def test_footprint_must_be_a_32_bit_hex_hash(tmp_path, footprint, reason):
    """A task footprint that is negative, wider than StarPU's 32-bit hash, or not hex names the task's key (a
    negative or 33-bit footprint was accepted and could match no model entry)."""
    doc = cholesky(960 * 2).to_json()
    doc["tasks"][1]["footprint"] = footprint
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=rf"^{path}: tasks\[1\]\.footprint: {reason}"):
        load_dag(path)
