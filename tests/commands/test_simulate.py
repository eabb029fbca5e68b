"""``nodecast simulate``: outputs, sweeps, the reference comparison, and one-line errors (exit 2)."""

from __future__ import annotations

import csv
import json

import pytest

from nodecast.cli import main

pytestmark = pytest.mark.shared  # needs ../shared/data/starpu


@pytest.fixture
def starpu_args(starpu_data):
    return ["--starpu-dir", str(starpu_data / "sampling"), "--starpu-machine", "attila"]


def test_single_run_writes_trace_gantt_and_summary(tmp_path, starpu_args, capsys):
    """One Cholesky run prints GFlop/s and writes a Perfetto-readable trace, a Gantt PNG and a JSON summary."""
    trace, gantt, summary = tmp_path / "t.json", tmp_path / "g.png", tmp_path / "s.json"
    code = main(["simulate", "cholesky", "--size", "3840", *starpu_args, "--trace", str(trace), "--gantt", str(gantt), "--json", str(summary)])
    assert code == 0
    out = capsys.readouterr().out
    assert "GFlop/s" in out and "CUDA0" in out
    doc = json.loads(trace.read_text())
    names = {e.get("name") for e in doc["traceEvents"]}
    assert "POTRF(0)" in names and any(e["ph"] == "X" and e["pid"] == 2 for e in doc["traceEvents"])
    assert gantt.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(summary.read_text())["n_tasks"] == 20


def test_outputs_are_byte_identical_across_runs(tmp_path, starpu_args):
    """Two runs with the same inputs and seed write identical trace, summary and Gantt files."""
    files = []
    for i in range(2):
        t, s, g = tmp_path / f"t{i}.json", tmp_path / f"s{i}.json", tmp_path / f"g{i}.png"
        argv = ["simulate", "lu", "--size", "2880", *starpu_args, "--scheduler", "random", "--seed", "3"]
        assert main([*argv, "--trace", str(t), "--json", str(s), "--gantt", str(g)]) == 0
        files.append((t.read_bytes(), s.read_bytes(), g.read_bytes()))
    assert files[0] == files[1]


def test_size_sweep_writes_table_and_plot(tmp_path, starpu_args):
    """A size sweep over two schedulers writes one CSV row per run and the GFlop/s-vs-size plot."""
    table, plot = tmp_path / "sweep.csv", tmp_path / "sweep.png"
    code = main(["simulate", "cholesky", "--sizes", "1920:3840:960", "--scheduler", "dmda,eager", *starpu_args, "--csv", str(table), "--plot", str(plot)])
    assert code == 0
    rows = list(csv.DictReader(table.open()))
    assert len(rows) == 6 and {r["scheduler"] for r in rows} == {"dmda", "eager"}
    assert plot.stat().st_size > 0


def test_what_if_options(tmp_path, starpu_args):
    """GPU count, GPU memory and bandwidth what-ifs are accepted and recorded in the notes."""
    summary = tmp_path / "s.json"
    code = main(["simulate", "cholesky", "--size", "4800", *starpu_args, "--gpus", "2", "--gpu-memory", "1GB", "--bandwidth-scale", "2", "--json", str(summary)])
    assert code == 0
    notes = " ".join(json.loads(summary.read_text())["notes"])
    assert "2 of 3 GPUs" in notes and "GPU memory 1.000 GB" in notes and "bandwidth x2" in notes


def test_compare_reference_small_rows(tmp_path, starpu_data, starpu_args, capsys):
    """--compare-reference runs the reference rows (here up to 10 blocks) and reports both GFlop/s."""
    out_csv = tmp_path / "cmp.csv"
    ref = starpu_data / "reference" / "attila.csv"
    code = main(["simulate", "--compare-reference", str(ref), "--max-blocks", "10", *starpu_args, "--csv", str(out_csv)])
    assert code == 0
    rows = list(csv.DictReader(out_csv.open()))
    assert len(rows) == 28
    gpu_only = [r for r in rows if r["worker_config"] == "gpuonly"]
    assert all(float(r["nodecast_gflops"]) > 0 for r in rows)
    assert all(abs(float(r["diff_pct"])) < 12 for r in gpu_only)
    assert all(r["reference_memory_full"] == r["nodecast_memory_full"] == "False" for r in rows)
    assert "rows within 3 %" in capsys.readouterr().out


def _one_line_error(capsys, argv):
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("nodecast: error: ")
    return err


def test_block_size_not_dividing_is_exit_2(capsys, starpu_args):
    """A block size that does not divide the matrix prints one line and exits 2."""
    err = _one_line_error(capsys, ["simulate", "cholesky", "--size", "10000", *starpu_args])
    assert "does not divide" in err


def test_cyclic_dag_is_exit_2(tmp_path, capsys, starpu_args):
    """A cyclic DAG file prints one line naming the cycle and exits 2."""
    dag = tmp_path / "c.json"
    dag.write_text(
        json.dumps(
            {
                "data": [{"name": "A", "size_bytes": 3686400}],
                "tasks": [
                    {"name": "x", "kernel": "chol_model_potrf", "access": [["A", "RW"]], "deps": ["y"]},
                    {"name": "y", "kernel": "chol_model_potrf", "access": [["A", "RW"]]},
                ],
            }
        )
    )
    err = _one_line_error(capsys, ["simulate", "--dag", str(dag), *starpu_args])
    assert "cycle" in err


def test_kernel_without_model_is_exit_2_unless_given_a_time(tmp_path, capsys, starpu_args):
    """A kernel without a model is one error line; --kernel-time supplies a duration for it."""
    dag = tmp_path / "k.json"
    dag.write_text(json.dumps({"data": [{"name": "A", "size_bytes": 1000}], "tasks": [{"kernel": "mystery", "access": [["A", "RW"]]}]}))
    err = _one_line_error(capsys, ["simulate", "--dag", str(dag), *starpu_args])
    assert "mystery" in err
    assert main(["simulate", "--dag", str(dag), *starpu_args, "--kernel-time", "mystery=0.001"]) == 0


def test_dag_reading_unwritten_data_runs_and_says_so(tmp_path, capsys, starpu_args):
    """A DAG reading data nobody wrote runs; the output notes that the data starts in host memory."""
    dag = tmp_path / "r.json"
    dag.write_text(json.dumps({"data": [{"name": "A", "size_bytes": 3686400}], "tasks": [{"kernel": "chol_model_potrf", "access": [["A", "R"]], "async": False}]}))
    assert main(["simulate", "--dag", str(dag), *starpu_args]) == 0
    assert "start valid in host memory" in capsys.readouterr().out


def test_platform_without_route_is_exit_2(tmp_path, capsys, starpu_data):
    """A platform where a GPU has no route to RAM prints one line and exits 2."""
    xml = tmp_path / "x.platform.xml"
    xml.write_text(
        '<platform version="4"><AS id="a" routing="Full"><host id="RAM" speed="1f"/>'
        '<host id="CUDA0" speed="1f"><prop id="memsize" value="1000000000"/></host>'
        '<link id="l" bandwidth="1e9Bps" latency="0s"/>'
        '<route src="RAM" dst="CUDA0" symmetrical="NO"><link_ctn id="l"/></route></AS></platform>'
    )
    err = _one_line_error(capsys, ["simulate", "cholesky", "--size", "1920", "--platform", str(xml), "--starpu-dir", str(starpu_data / "sampling")])
    assert "no route between memory nodes CUDA0 and RAM" in err


def test_missing_platform_is_exit_2(capsys, monkeypatch):
    """Without any platform option the command says what to give."""
    monkeypatch.delenv("NODECAST_STARPU_DIR", raising=False)
    err = _one_line_error(capsys, ["simulate", "cholesky", "--size", "1920"])
    assert "--starpu-dir" in err


def test_a_scheduler_added_to_the_registry_is_listed_and_runs(tmp_path, starpu_args, monkeypatch, capsys):
    """The command reads its schedulers from the registry: a new entry is in --help and runs, no other list to edit."""
    from nodecast.runtime.schedulers import SCHEDULERS
    from nodecast.runtime.schedulers.eager import Eager

    monkeypatch.setitem(SCHEDULERS, "fifo", Eager)  # a stand-in policy under a new name
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    assert "dmdas, heft, fifo; a comma list sweeps" in " ".join(capsys.readouterr().out.split())
    summary = tmp_path / "s.json"
    assert main(["simulate", "cholesky", "--size", "1920", *starpu_args, "--scheduler", "fifo", "--json", str(summary)]) == 0
    assert json.loads(summary.read_text())["scheduler"] == "fifo"


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--sizes", "19200:9600:960"], "gives no size"),
        (["--sizes", "9600:99999999999:1"], "a sweep holds at most 1,000"),
        (["--sizes", "9600:19200:0"], "STEP must be > 0"),
        (["--sizes", "0,9600"], "sizes must be > 0"),
        (["--scheduler", ","], "no scheduler named"),
        (["--scheduler", "dmda,nosuch"], "unknown scheduler 'nosuch'"),
        (["--seed", "-1"], "--seed: must be >= 0"),
        (["--workers", "all", "--ncpus", "-1"], "--ncpus: must be from 0 to 1024"),
        (["--ncpus", "2"], "only with --workers all"),
        (["--bandwidth-links", "CUDA"], "no scale is given"),
        (["--bandwidth-scale", "1e-308"], "out of range"),
        (["--jobs", "0"], "--jobs: must be from 1 to 1024"),
        (["--jobs", "2"], "this is a single run"),
        (["--sizes", "9600,19200"], "give --size or --sizes, not both"),
        (["--kernel-time", "chol_model_gemm=1e308"], "SECONDS <= 1e+06"),
        (["--kernel-time", "=5"], "expected KERNEL=SECONDS"),
        (["--kernel-time", "chol_model_gemm=-1"], "expected KERNEL=SECONDS"),
        (["--kernel-time", "nosuch=1"], "no kernel 'nosuch'"),
        (["--gpus", "1000"], "at most 32 GPUs"),
        (["--bandwidth-scale", "1e308"], "out of range"),
        (["--bandwidth-scale", "2", "--bandwidth-links", "("], "not a regular expression"),
        (["--bandwidth-scale", "2", "--bandwidth-links", "nomatch"], "matches no link"),
        (["--block-size", "1"], "nodecast simulates at most 10,000,000"),
    ],
)
def test_bad_options_are_one_line(capsys, starpu_args, options, expected):
    """Option values that cannot work are refused before any simulation, in one line naming the option."""
    err = _one_line_error(capsys, ["simulate", "cholesky", "--size", "9600", *starpu_args, *options])
    assert expected in err


def test_sweep_outputs_on_a_single_run_are_refused(tmp_path, capsys, starpu_args):
    """--csv and --plot belong to sweeps: on a single run they are an error, not silently ignored."""
    err = _one_line_error(capsys, ["simulate", "cholesky", "--size", "3840", *starpu_args, "--csv", str(tmp_path / "x.csv")])
    assert "single run" in err
    assert not (tmp_path / "x.csv").exists()


def test_every_output_is_checked_before_any_is_written(tmp_path, capsys, starpu_args):
    """A bad second output path fails before the first output is written (no partial result left)."""
    first = tmp_path / "s.json"
    err = _one_line_error(capsys, ["simulate", "cholesky", "--size", "3840", *starpu_args, "--json", str(first), "--trace", str(tmp_path / "no" / "t.json")])
    assert "folder does not exist" in err
    assert not first.exists()
    err = _one_line_error(capsys, ["simulate", "cholesky", "--size", "3840", *starpu_args, "--json", str(first), "--gantt", str(tmp_path / "g.svg")])
    assert "cannot write --gantt as .svg" in err
    assert not first.exists()


def test_non_utf8_and_deeply_nested_dag_files(tmp_path, capsys, starpu_args):
    """A DAG file that is not UTF-8, or JSON nested beyond Python's recursion limit, is one line naming it."""
    garbage = tmp_path / "g.json"
    garbage.write_bytes(b"{\x82\xff\x00")
    assert "not UTF-8 text" in _one_line_error(capsys, ["simulate", "--dag", str(garbage), *starpu_args])
    deep = tmp_path / "d.json"
    deep.write_text("[" * 100_000)
    err = _one_line_error(capsys, ["simulate", "--dag", str(deep), *starpu_args])
    assert "nested too deeply" in err and "d.json" in err


def test_reference_rows_are_checked_with_their_line(tmp_path, capsys, starpu_args):
    """A reference CSV row that cannot be simulated is named by file and line, not reported as an option error."""
    header = "app,precision,matrix_size,block_size,scheduler,worker_config,sim_gflops\n"
    for row, expected in (
        ("cholesky_implicit,single,9600,0,dmda,gpuonly,1\n", "line 2: matrix_size and block_size must be > 0"),
        ("cholesky_implicit,single,9601,960,dmda,gpuonly,1\n", "line 2: block_size 960 does not divide"),
        ("cholesky_implicit,single,9600,960,nosuch,gpuonly,1\n", "line 2: unknown scheduler 'nosuch'"),
    ):
        ref = tmp_path / "ref.csv"
        ref.write_text(header + row)
        err = _one_line_error(capsys, ["simulate", "--compare-reference", str(ref), *starpu_args])
        assert expected in err and "ref.csv" in err


def test_a_file_given_as_starpu_dir_is_named(tmp_path, capsys):
    afile = tmp_path / "afile.txt"
    afile.write_text("x")
    err = _one_line_error(capsys, ["simulate", "cholesky", "--size", "3840", "--starpu-dir", str(afile), "--starpu-machine", "attila"])
    assert "is a file, not a folder" in err


@pytest.mark.parametrize(
    ("task_field", "expected"),
    [
        ('"flops": NaN', "flops must be a finite number >= 0"),
        ('"flops": Infinity', "flops must be a finite number >= 0"),
        ('"async": "maybe"', "async must be true or false"),
        ('"size_bytes": 2000000000000000000', "size_bytes must be an integer from 0 to 2^50"),
    ],
)
def test_dag_values_json_allows_but_a_graph_cannot_hold(tmp_path, capsys, starpu_args, task_field, expected):
    """NaN/Infinity FLOPs (Python's JSON reader accepts them), a non-boolean async, an impossible size: one line."""
    dag = tmp_path / "v.json"
    dag.write_text('{"data": [{"name": "A", "size_bytes": 3686400}], "tasks": [{"kernel": "chol_model_potrf", '
                   '"access": [["A", "RW"]], ' + task_field + "}]}")
    err = _one_line_error(capsys, ["simulate", "--dag", str(dag), *starpu_args])
    assert expected in err and "v.json" in err


def _reference_rows(starpu_data, lines, machines):
    """Rows of the real reference/attila.csv (1-based file lines) with the machine column set as given."""
    text = (starpu_data / "reference" / "attila.csv").read_text().splitlines()
    rows = [text[0]]
    for line, machine in zip(lines, machines, strict=True):
        rows.append(machine + text[line - 1][len("attila") :])
    return "\n".join(rows) + "\n"


def test_rows_of_several_machines_run_each_on_its_own(tmp_path, starpu_data, capsys):
    """A reference file mixing machines runs each row on its own machine's platform and models.

    The file is built from real rows of reference/attila.csv (Cholesky 9600 dmda gpuonly, line 2)
    with the machine column of the second copy changed to hannibal, which sampling/ also holds:
    that row must give what a plain hannibal run gives, not attila's figure.
    """
    ref = tmp_path / "mixed.csv"
    ref.write_text(_reference_rows(starpu_data, [2, 2], ["attila", "hannibal"]))
    table = tmp_path / "cmp.csv"
    sampling = str(starpu_data / "sampling")
    assert main(["simulate", "--compare-reference", str(ref), "--starpu-dir", sampling, "--csv", str(table)]) == 0
    rows = list(csv.DictReader(table.open()))
    assert [r["machine"] for r in rows] == ["attila", "hannibal"]
    capsys.readouterr()
    for row in rows:
        summary = tmp_path / f"{row['machine']}.json"
        argv = ["simulate", "cholesky", "--size", "9600", "--starpu-dir", sampling, "--starpu-machine", row["machine"]]
        assert main([*argv, "--json", str(summary)]) == 0
        assert float(row["nodecast_gflops"]) == round(json.loads(summary.read_text())["gflops"], 3)
    assert float(rows[0]["nodecast_gflops"]) > 2 * float(rows[1]["nodecast_gflops"])  # C2050s against FX5800s


def test_starpu_machine_keeps_the_rows_of_that_machine(tmp_path, starpu_data, capsys):
    """--starpu-machine with a mixed reference file compares only that machine's rows (real rows, machine column edited)."""
    ref = tmp_path / "mixed.csv"
    ref.write_text(_reference_rows(starpu_data, [2, 78, 2], ["attila", "hannibal", "hannibal"]))
    table = tmp_path / "cmp.csv"
    argv = ["simulate", "--compare-reference", str(ref), "--starpu-dir", str(starpu_data / "sampling"), "--csv", str(table)]
    assert main([*argv, "--starpu-machine", "hannibal"]) == 0
    rows = list(csv.DictReader(table.open()))
    assert [(r["machine"], r["app"]) for r in rows] == [("hannibal", "lu_implicit_example_float"), ("hannibal", "cholesky_implicit")]
    capsys.readouterr()
    err = _one_line_error(capsys, [*argv, "--starpu-machine", "idgraf"])
    assert "no reference row of machine 'idgraf'" in err and "attila, hannibal" in err


def test_a_row_whose_machine_is_not_in_starpu_dir_is_refused(tmp_path, starpu_data, capsys):
    """A row naming a machine without calibration in --starpu-dir is one line naming file, line and machine, before any simulation."""
    ref = tmp_path / "ref.csv"
    ref.write_text(_reference_rows(starpu_data, [2, 10], ["attila", "nosuch"]))
    table = tmp_path / "cmp.csv"
    argv = ["simulate", "--compare-reference", str(ref), "--starpu-dir", str(starpu_data / "sampling"), "--csv", str(table)]
    err = _one_line_error(capsys, argv)
    assert "ref.csv: line 3: machine 'nosuch'" in err and "attila, hannibal" in err and "--starpu-machine" in err
    assert not table.exists()


def test_platform_option_with_rows_of_several_machines_is_refused(tmp_path, starpu_data, capsys):
    """--platform replaces one machine's platform: with rows of two machines it is refused in one line."""
    ref = tmp_path / "ref.csv"
    ref.write_text(_reference_rows(starpu_data, [2, 2], ["attila", "hannibal"]))
    xml = starpu_data / "sampling" / "bus" / "attila.platform.v4.xml"
    argv = ["simulate", "--compare-reference", str(ref), "--starpu-dir", str(starpu_data / "sampling"), "--platform", str(xml)]
    err = _one_line_error(capsys, argv)
    assert "--platform" in err and "attila, hannibal" in err


def test_rows_whose_status_is_not_ok_are_skipped_and_counted(tmp_path, starpu_data, capsys):
    """Rows StarPU itself failed on (status not ok, empty numbers) are skipped with a count per status; the ok row runs.

    The failed rows are real rows of reference/attila.csv with their status set to 'crashed' or
    'timeout' and their sim_time_ms, sim_gflops and wall_s emptied, as the reference format writes them.
    """
    text = (starpu_data / "reference" / "attila.csv").read_text().splitlines()
    failed = [",".join([*line.split(",")[:10], "", "", "", status, ""]) for line, status in ((text[9], "crashed"), (text[17], "timeout"), (text[25], "crashed"))]
    ref = tmp_path / "ref.csv"
    ref.write_text("\n".join([text[0], text[1], *failed]) + "\n")
    table = tmp_path / "cmp.csv"
    assert main(["simulate", "--compare-reference", str(ref), "--starpu-dir", str(starpu_data / "sampling"), "--csv", str(table)]) == 0
    out = capsys.readouterr().out
    assert "skipped 3 rows whose status is not ok (crashed: 2, timeout: 1)" in out
    assert [r["scheduler"] for r in csv.DictReader(table.open())] == ["dmda"]


def test_malformed_number_in_an_ok_row_names_file_line_and_field(tmp_path, starpu_data, capsys):
    """An ok row with an empty or non-numeric sim_gflops is still refused, naming the file, line and column."""
    text = (starpu_data / "reference" / "attila.csv").read_text().splitlines()
    fields = text[9].split(",")
    fields[11] = "fast"
    ref = tmp_path / "ref.csv"
    ref.write_text("\n".join([text[0], text[1], ",".join(fields)]) + "\n")
    err = _one_line_error(capsys, ["simulate", "--compare-reference", str(ref), "--starpu-dir", str(starpu_data / "sampling")])
    assert "ref.csv: line 3: sim_gflops: malformed number 'fast'" in err


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_row_without_kernel_model_fails_alone(tmp_path, starpu_data, capsys, jobs):
    """A row whose kernels have no model on its machine is reported failed with the reason; the other rows still run.

    Built from real rows of reference/attila.csv: Cholesky 9600 dmda (line 2) and LU double 9600 dmda
    (line 50) with the machine set to hannibal, whose sampling/ models include no double-precision LU
    kernel. With --jobs 2 the rows run on a local Dask cluster.
    """
    ref = tmp_path / "ref.csv"
    ref.write_text(_reference_rows(starpu_data, [2, 50, 2], ["attila", "hannibal", "hannibal"]))
    table = tmp_path / "cmp.csv"
    argv = ["simulate", "--compare-reference", str(ref), "--starpu-dir", str(starpu_data / "sampling"), "--csv", str(table), "--jobs", jobs]
    assert main(argv) == 0
    out = capsys.readouterr().out
    rows = list(csv.DictReader(table.open()))
    assert [r["machine"] for r in rows] == ["attila", "hannibal", "hannibal"]
    assert rows[1]["nodecast_gflops"] == "" and "starpu_dlu_lu_model_getrf' has no performance model for machine 'hannibal'" in rows[1]["error"]
    assert rows[0]["error"] == rows[2]["error"] == "" and float(rows[2]["nodecast_gflops"]) > 0
    assert "failed: kernel 'starpu_dlu_lu_model_getrf'" in out
    assert "1 row failed (line 3):" in out and "/2 rows within 3 %" in out


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_compare_reference_says_how_far_it_is_in_a_log(tmp_path, starpu_data, capsys, monkeypatch, jobs):
    """Not at a terminal (a log, a pipe), the comparison prints "compared K of N runs, T" on stderr as rows finish,
    at most every LOG_EVERY_S seconds (here 0: every row), run here or on a Dask cluster (--jobs 2); stdout keeps
    only the results. Three real rows of reference/attila.csv (lines 2, 3, 10)."""
    from nodecast.report.terminal import _progress

    monkeypatch.setattr(_progress, "LOG_EVERY_S", 0.0)
    ref = tmp_path / "ref.csv"
    ref.write_text(_reference_rows(starpu_data, [2, 3, 10], ["attila"] * 3))
    argv = ["simulate", "--compare-reference", str(ref), "--starpu-dir", str(starpu_data / "sampling"), "--jobs", jobs]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    said = [line for line in err.splitlines() if line.startswith("compared ")]
    for k in (1, 2, 3):
        assert any(line.startswith(f"compared {k} of 3 runs, ") for line in said), err
    assert "compared " not in out and "rows within 3 %" in out


def test_every_row_failing_is_one_line(tmp_path, starpu_data, capsys):
    """When no row can be simulated the command says why in one line and writes no table (real LU double row, machine set to hannibal)."""
    ref = tmp_path / "ref.csv"
    ref.write_text(_reference_rows(starpu_data, [50], ["hannibal"]))
    table = tmp_path / "cmp.csv"
    err = _one_line_error(capsys, ["simulate", "--compare-reference", str(ref), "--starpu-dir", str(starpu_data / "sampling"), "--csv", str(table)])
    assert "ref.csv: no row could be simulated" in err and "starpu_dlu_lu_model_getrf" in err
    assert not table.exists()


@pytest.mark.parametrize("value", ["-2GB", "-2", "-1e9", "0MiB"])
def test_negative_gpu_memory_reaches_nodecasts_check(capsys, starpu_args, value):
    """--gpu-memory -2GB is read as a value (not as an option) and refused by nodecast in one line."""
    err = _one_line_error(capsys, ["simulate", "cholesky", "--size", "3840", *starpu_args, "--gpu-memory", value])
    assert f"--gpu-memory: must be > 0 bytes (got '{value}')" in err


def test_compare_reference_json_writes_the_comparison(tmp_path, starpu_data, starpu_args):
    """--compare-reference --json writes the comparison (headline first, then every row as --csv has it); the option
    used to be accepted and then ignored, leaving no file."""
    doc_path, table = tmp_path / "cmp.json", tmp_path / "cmp.csv"
    ref = starpu_data / "reference" / "attila.csv"
    assert main(["simulate", "--compare-reference", str(ref), "--max-blocks", "10", "--scheduler", "dmda,eager",
                 *starpu_args, "--json", str(doc_path), "--csv", str(table)]) == 0
    doc = json.loads(doc_path.read_text())
    rows = list(csv.DictReader(table.open()))
    assert list(doc)[0] == "headline" and len(doc["rows"]) == len(rows) == 10
    assert [r["nodecast_gflops"] for r in doc["rows"]] == [float(r["nodecast_gflops"]) for r in rows]
    within = sum(abs(r["diff_pct"]) <= 3.0 for r in doc["rows"])
    assert doc["rows_within_3_pct"] == within and doc["headline"][0]["value"] == within / 10


def test_single_sweep_and_comparison_json_keep_their_layout(tmp_path, starpu_args, starpu_data):
    """A run's summary and a sweep's rows are JSON with two-space indents and sorted keys, as before --html existed."""
    one, many = tmp_path / "one.json", tmp_path / "many.json"
    assert main(["simulate", "cholesky", "--size", "1920", *starpu_args, "--json", str(one)]) == 0
    assert main(["simulate", "cholesky", "--sizes", "1920,2880", *starpu_args, "--json", str(many)]) == 0
    for path in (one, many):
        text = path.read_text()
        assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"
    assert isinstance(json.loads(many.read_text()), list)


@pytest.mark.parametrize("argv", [["cholesky", "--size", "1920"], ["cholesky", "--sizes", "1920,2880"]])
def test_html_path_is_checked_before_simulating(tmp_path, capsys, starpu_args, argv):
    """An --html path that is not .html, or in a missing folder, is one line (exit 2) and nothing is written."""
    err = _one_line_error(capsys, ["simulate", *argv, *starpu_args, "--json", str(tmp_path / "s.json"),
                                   "--html", str(tmp_path / "r.txt")])
    assert "--html" in err and ".html" in err
    err = _one_line_error(capsys, ["simulate", *argv, *starpu_args, "--html", str(tmp_path / "no" / "r.html")])
    assert "folder does not exist" in err
    assert list(tmp_path.iterdir()) == []
