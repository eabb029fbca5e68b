"""What end to end is said to start at: the first API call, or, for a trace without host API records, the first
GPU op's start (it was "first API call" for every trace)."""

from __future__ import annotations

import pytest

from nodecast.cli import main
from nodecast.engine import metrics
from nodecast.graph.build import build_graph

#: An nvprof GPU-trace CSV (no host API records): a 1 MB copy, then a kernel 0.5 ms later, on a Tesla K40c.
CSV = ('"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z","Registers Per Thread",'
       '"Static SMem","Dynamic SMem","Size","Throughput","Device","Context","Stream","Name"\n'
       "s,s,,,,,,,,B,B,MB,GB/s,,,,\n"
       '2.000000,1.000000e-03,,,,,,,,,,1.000000,0.976563,"Tesla K40c (0)","1","7","[CUDA memcpy HtoD]"\n'
       '2.001500,1.000000e-04,256,1,1,256,1,1,8,0,0,,,"Tesla K40c (0)","1","7","k(float*) [5]"\n')
NO_API = "end to end (first GPU op start to last GPU op end)"
WITH_API = "end to end (first API call to last GPU op end)"
API_SAMPLE = "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"


@pytest.fixture
def csv_trace(tmp_path):
    path = tmp_path / "no-api.csv"
    path.write_text(CSV)
    return str(path)


def test_label_follows_the_api_records(csv_trace):
    """One helper gives the label, from whether the graph has host API records."""
    assert metrics.end_to_end_label(build_graph(csv_trace)) == NO_API
    assert metrics.end_to_end_label(build_graph(API_SAMPLE)) == WITH_API


@pytest.mark.parametrize("command", [["replay"], ["forecast", "--to", "gtx-970"],
                                     ["forecast", "--to", "gtx-970,titan", "--jobs", "1"]])
def test_terminal_and_page_say_first_gpu_op(csv_trace, tmp_path, capsys, command):
    """`replay` and `forecast` (one target and several) print and write no "first API call" for such a trace."""
    page = tmp_path / "page.html"
    assert main([command[0], csv_trace, *command[1:], "--html", str(page)]) == 0
    out = capsys.readouterr().out
    html = page.read_text()
    assert "first API call" not in out and "first API call" not in html
    assert "first GPU op start" in out and "first GPU op start" in html


def test_api_trace_keeps_first_api_call(capsys):
    """A trace with API records still says the first API call."""
    assert main(["replay", API_SAMPLE]) == 0
    assert WITH_API in capsys.readouterr().out


def test_evaluate_says_first_gpu_op(csv_trace, tmp_path, capsys):
    """`evaluate` of two such runs labels the whole-run end to end by what it is."""
    page = tmp_path / "page.html"
    assert main(["evaluate", csv_trace, csv_trace, "--from", "tesla-k40", "--to", "tesla-k40",
                 "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert NO_API in out and "first API call" not in out
    assert "first API call" not in page.read_text()


@pytest.mark.parametrize(("b", "note"), [
    ("csv", "runs A and B have no host API records: their end to end runs from their first GPU op start"),
    ("api", "run A has no host API records: its end to end runs from its first GPU op start"),
])
def test_whole_run_note_agrees_in_number(csv_trace, b, note):
    """The whole-run note about runs without API records: "runs A and B have", "run A has" (it read "run A and B
    has ... its")."""
    from nodecast.workflows.evaluate_run import compare_run_files
    from nodecast.machines import load_machine

    whole = compare_run_files(csv_trace, csv_trace if b == "csv" else API_SAMPLE, load_machine("tesla-k40"),
                              load_machine("tesla-k40"))
    assert any(n.startswith(note) for n in whole.notes), whole.notes
    assert whole.end_to_end_start() == ("first GPU op start" if b == "csv" else
                                        "first GPU op start on A or first API call on B")
