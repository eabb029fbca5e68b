"""Task graphs: implicit dependencies, the DAG file format, the applications."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodecast.errors import InputError
from nodecast.graph.opgraph import Anchor, EdgeKind, OpGraph, OpKind
from nodecast.graph.apps import cholesky, lu
from nodecast.graph.taskgraph import RW, R, W, TaskGraph, initial_data, load_dag, to_json, total_flops


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
    assert len(g) == 4 + 6 + 4 + 6
    names = g.names
    prio = g.ops["priority"]
    assert names[:3] == ["POTRF(0)", "TRSM(1,0)", "TRSM(2,0)"]
    assert prio[names.index("TRSM(1,0)")] == 5 and prio[names.index("TRSM(2,0)")] == 0
    assert prio[names.index("SYRK(1,0)")] == 5
    assert not g.ops["async"][names.index("POTRF(1)")] and g.ops["async"][names.index("TRSM(1,0)")]
    assert g.ops["size_bytes"][names.index("GEMM(2,1,0)")] == 3 * 960 * 960 * 4
    assert total_flops(g) == pytest.approx((3840**3) / 3 + 3840**2 / 2 + 3840 / 6)
    assert len(g.tasks.wont_use_task) == 4 + 6


def test_cholesky_72000_has_73150_tasks():
    """The benchmark's Cholesky (75 blocks of 960) has 73 150 tasks."""
    assert len(cholesky(72000)) == 73150


def test_lu_structure_matches_starpu():
    """LU with 3 blocks: GETRF, TRSM_LL/TRSM_RU pairs, GEMMs; nominal 2n^3/3."""
    g = lu(960 * 3, precision="double")
    assert len(g) == 3 + 2 * (2 + 1) + (4 + 1)
    assert g.tasks.kernels[g.ops["kernel_id"][0]] == "starpu_dlu_lu_model_getrf"
    assert g.ops["size_bytes"][0] == 960 * 960 * 8
    assert total_flops(g) == pytest.approx(2 * 2880**3 / 3)


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
    g2 = load_dag(_write(tmp_path, to_json(g)))
    assert g2.names == g.names and (g2.indptr == g.indptr).all() and (g2.src == g.src).all()
    assert (g2.ops["priority"] == g.ops["priority"]).all()
    assert total_flops(g2) == total_flops(g) and g2.tasks.wont_use() == g.tasks.wont_use()


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
    assert initial_data(g) == [0]
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
    built = g.build()
    assert built.order.tolist() == list(range(len(accesses)))


def test_graph_builders_pause_the_collector_and_restore_it():
    import gc

    from nodecast.errors import InputError
    from nodecast.graph.apps import cholesky
    from nodecast.graph.taskgraph import paused_gc

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
    doc = to_json(cholesky(960 * 2))
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
    path.write_text(json.dumps(to_json(cholesky(960 * 2))))
    g = load_dag(path)
    assert g.tasks.nominal_flops == cholesky(960 * 2).tasks.nominal_flops > 0 and len(g.tasks.wont_use_task) == 3


@pytest.mark.parametrize(("footprint", "reason"), [
    ("-1f", r"'-1f' is out of range \(must be >= 0 and <= 4,294,967,295\)"),
    ("1ffffffff", r"'1ffffffff' is out of range"),
    ("zz", r"'zz' is not a base-16 integer"),
])
def test_footprint_must_be_a_32_bit_hex_hash(tmp_path, footprint, reason):
    """A task footprint that is negative, wider than StarPU's 32-bit hash, or not hex names the task's key (a
    negative or 33-bit footprint was accepted and could match no model entry)."""
    doc = to_json(cholesky(960 * 2))
    doc["tasks"][1]["footprint"] = footprint
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=rf"^{path}: tasks\[1\]\.footprint: {reason}"):
        load_dag(path)


# -- task graphs are OpGraphs (issue 13: one graph type for traced programs and task graphs) ----------------------

def test_task_graph_is_an_opgraph_with_open_placement():
    """Cholesky is an OpGraph: one kernel op per task with device -1 (open), DATA edges from END with lag 0 that
    match the builder's dependencies, a topological order, and the task columns and data accesses."""
    b = TaskGraph()
    a, c = b.add_data("A", 8), b.add_data("C", 16)
    w0 = b.add_task("k", [(a, W)], priority=2, footprint=0x617E5FE6)
    r1 = b.add_task("k2", [(a, R), (c, RW)], async_ok=False, flops=3.0)
    g = b.build()
    assert isinstance(g, OpGraph) and len(g) == 2 and g.names == b.names
    assert (g.ops["kind"] == OpKind.KERNEL).all() and (g.ops["device"] == -1).all()
    assert g.preds(r1) == [w0] and g.kind.tolist() == [EdgeKind.DATA] and g.anchor.tolist() == [Anchor.END]
    assert g.lag_s.tolist() == [0.0] and g.order.tolist() == [0, 1]
    assert g.ops["priority"].tolist() == [2, 0] and g.ops["footprint"].tolist() == [0x617E5FE6, -1]
    assert g.ops["async"].tolist() == [True, False] and g.ops["size_bytes"].tolist() == [8, 24]
    assert g.ops["flops"].tolist() == [0.0, 3.0] and g.tasks.kernels == ["k", "k2"]
    assert g.tasks.accesses(r1) == [(a, R), (c, RW)] and g.tasks.succs(w0) == [r1]
    assert g.tasks.data_bytes.tolist() == [8, 16]


def test_successors_keep_declaration_order(tmp_path):
    """An explicit dependency declared in the file comes after the implicit successors in the successor list
    (the order a runtime releases them in), and is an edge of kind TASK_DEP."""
    doc = {"data": [{"name": "A", "size_bytes": 4}, {"name": "B", "size_bytes": 4}],
           "tasks": [{"name": "w", "kernel": "k", "access": [["A", "W"]]},
                     {"name": "x", "kernel": "k", "access": [["B", "W"]], "deps": ["w"]},
                     {"name": "r", "kernel": "k", "access": [["A", "R"]]}]}
    g = load_dag(_write(tmp_path, doc))
    assert g.tasks.succs(0) == [2, 1]
    assert g.in_edges(1)["kind"].tolist() == [EdgeKind.TASK_DEP] and g.in_edges(2)["kind"].tolist() == [EdgeKind.DATA]


def test_explicit_dependencies_survive_to_json(tmp_path):
    """A DAG file's explicit deps (backward and forward) are written back by to_json and load again the same
    (to_json dropped them: a loaded graph written back lost every explicit dependency)."""
    doc = {"data": [{"name": "A", "size_bytes": 4}, {"name": "B", "size_bytes": 4}, {"name": "C", "size_bytes": 4}],
           "tasks": [{"name": "a", "kernel": "k", "access": [["A", "RW"]], "deps": ["c"]},
                     {"name": "b", "kernel": "k", "access": [["B", "RW"]], "deps": ["a"]},
                     {"name": "c", "kernel": "k", "access": [["C", "R"]]}]}
    g = load_dag(_write(tmp_path, doc))
    again = load_dag(_write(tmp_path, to_json(g)))
    assert [again.preds(t) for t in range(3)] == [g.preds(t) for t in range(3)] == [[2], [0], []]
    assert to_json(again) == to_json(g)
    assert g.order.tolist() == [2, 0, 1]  # c first: a waits for it


def test_builder_refuses_additions_after_build():
    """A built TaskGraph shares its lists with the graph: adding to it afterwards is a ValueError, building again is fine."""
    b = TaskGraph()
    a = b.add_data("A", 8)
    b.add_task("k", [(a, RW)])
    g = b.build()
    with pytest.raises(ValueError, match="was built"):
        b.add_task("k", [(a, R)])
    with pytest.raises(ValueError, match="was built"):
        b.add_data("B", 8)
    assert len(b.build()) == len(g) == 1


def test_extra_deps_must_name_earlier_tasks():
    """add_task's extra_deps on a task not yet submitted is a ValueError (the dependency was never released)."""
    b = TaskGraph()
    a = b.add_data("A", 8)
    t0 = b.add_task("k", [(a, R)])
    t1 = b.add_task("k", [(a, R)], extra_deps=[t0])
    assert b.build().preds(t1) == [t0]
    with pytest.raises(ValueError, match="extra_deps must name earlier tasks"):
        TaskGraph().add_task("k", [], extra_deps=[3])
