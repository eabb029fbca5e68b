"""CLI tests of inspect, project and evaluate on the sample traces shipped in the package."""

import json
import sqlite3
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pandas as pd
import pytest

from nodecast.cli import main
from nodecast.notes import percent

TITAN_PINNED = "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"
SUMMIT_PINNED = "sample:nvprof_ahead-bandwidthtest-htod-pinned_summit-v100"


def _sample_file(stem: str) -> Path:
    return Path(str(resources.files("nodecast") / "data" / "samples" / f"{stem}.nvvp"))


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_inspect_json_matches_sql_count(capsys):
    """inspect --json reports the transfer count and bytes a direct SQL query finds."""
    assert main(["inspect", TITAN_PINNED, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    db = sqlite3.connect(_sample_file(TITAN_PINNED.split(":")[1]))
    n, total = db.execute("SELECT count(*), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchone()
    assert out["counts"]["transfers"] == n
    assert sum(r["bytes"] for r in out["per_class"]) == total
    assert out["per_class"][0]["class"] == "htod_pinned"


def test_inspect_writes_png(tmp_path, capsys):
    """inspect --png writes a PNG file."""
    png = tmp_path / "dist.png"
    assert main(["inspect", TITAN_PINNED, "--png", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Time-based distribution" in capsys.readouterr().out


def test_project_writes_every_model_side_by_side(tmp_path, capsys):
    """project -o writes one column per model and the summary's total row sums the per-class rows."""
    out = tmp_path / "ops.parquet"
    summary = tmp_path / "summary.csv"
    assert main(["project", TITAN_PINNED, "--from", "titan", "--to", "summit", "-o", str(out),
                 "--summary", str(summary)]) == 0
    ops = pd.read_parquet(out)
    for model in ("ahead", "ahead-no-latency", "peak-bandwidth", "back-of-envelope"):
        assert f"{model}_s" in ops.columns
        assert ops[f"{model}_s"].notna().sum() == 2900
    s = pd.read_csv(summary).set_index("category")
    assert s.loc["total projected", "ahead_s"] == pytest.approx(s.drop("total projected")["ahead_s"].sum())
    out = capsys.readouterr().out
    assert "Ops no model could handle" not in out  # only transfers + syncs here
    # the header counts the ops the table covers, and says what was set aside
    assert "2,900 GPU ops (and 29 synchronisation records, not projected" in out


def test_project_reports_unhandled_kernels(capsys):
    """Kernels no chosen model handles (transfer models only) are listed as not projected, never dropped."""
    trace = Path(__file__).resolve().parents[2].parent / "shared/data/traces/nvprof_vectoradd-1M_t4.nvvp"
    if not trace.exists():
        pytest.skip("../shared/data is absent (a user's own clone)")
    assert main(["project", str(trace), "--from", "t4", "--to", "h100-sxm5-server", "--models",
                 "ahead,peak-bandwidth"]) == 0
    out = capsys.readouterr().out
    assert "Ops no model could handle" in out and "kernel" in out


def test_evaluate_titan_to_summit_pinned(tmp_path, capsys):
    """evaluate aligns all 2900 copies and AHEAD's model beats both baselines on the pinned sweep."""
    table = tmp_path / "wmape.csv"
    png = tmp_path / "box.png"
    assert main(["evaluate", TITAN_PINNED, SUMMIT_PINNED, "--from", "titan", "--to", "summit",
                 "--table", str(table), "--png", str(png)]) == 0
    t = pd.read_csv(table).set_index("model")
    assert t.loc["ahead", "ops"] == 2900
    assert t.loc["ahead", "all"] < t.loc["peak-bandwidth", "all"] < t.loc["unchanged", "all"]
    assert t.loc["ahead", "all"] < t.loc["back-of-envelope", "all"]
    assert png.stat().st_size > 0
    assert "unmatched: 0 in A, 0 in B" in capsys.readouterr().out


@pytest.mark.parametrize("content", [b"this is not a database\n", b""])
def test_not_a_trace_file(tmp_path, capsys, content):
    """A file that is no known trace format gives one error line and exit code 2."""
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(content)
    assert main(["inspect", str(bad)]) == 2
    assert str(bad) in _one_error_line(capsys)


def test_sqlite_without_cupti_tables(tmp_path, capsys):
    """A SQLite database without profiler tables is rejected with a clear line."""
    db = tmp_path / "other.sqlite"
    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.commit()
    assert main(["inspect", str(db)]) == 2
    assert "other.sqlite" in _one_error_line(capsys)


def test_empty_trace(tmp_path, capsys):
    """A real nvprof file with every GPU row deleted is an error, not an empty report."""
    db = tmp_path / "empty.nvvp"
    db.write_bytes(_sample_file(TITAN_PINNED.split(":")[1]).read_bytes())
    con = sqlite3.connect(db)
    for table in ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"):
        con.execute(f"DELETE FROM {table}")
    con.commit()
    con.close()
    assert main(["inspect", str(db)]) == 2
    assert "no GPU operation" in _one_error_line(capsys)


def test_unknown_machine(capsys):
    """An unknown machine name is one line that suggests close names."""
    assert main(["project", TITAN_PINNED, "--from", "titan", "--to", "sumit"]) == 2
    line = _one_error_line(capsys)
    assert "unknown machine 'sumit'" in line and "summit" in line


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        ("bandwidth_bps = 250e9", "bandwidth_bps = -250e9"),
        ("bandwidth_bps = 250e9", "bandwidth_bps = 0"),
        ("bandwidth_bps = 250e9", 'bandwidth_bps = "fast"'),
        ('kind = "pcie"', 'kind = "infiniband"'),
    ],
)
def test_bad_machine_file_leaves_no_output(tmp_path, capsys, edit, expected):
    """A machine file with a bad bandwidth or link kind fails before any output file is written."""
    from nodecast.machines.loader import catalogue_dir

    text = (catalogue_dir() / "titan.toml").read_text()
    assert edit in text
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace(edit, expected, 1))
    out = tmp_path / "ops.csv"
    assert main(["project", TITAN_PINNED, "--from", str(bad), "--to", "summit", "-o", str(out)]) == 2
    line = _one_error_line(capsys)
    assert "bad.toml" in line
    assert ("bandwidth_bps" in line) or ("kind" in line)
    assert list(tmp_path.iterdir()) == [bad]


def test_unwritable_output_fails_before_work(tmp_path, capsys):
    """An output in a folder that does not exist is reported and nothing is written."""
    out = tmp_path / "missing" / "ops.csv"
    assert main(["project", TITAN_PINNED, "--from", "titan", "--to", "summit", "-o", str(out)]) == 2
    assert "does not exist" in _one_error_line(capsys)


def test_bad_output_extension(tmp_path, capsys):
    """A table output with an unknown extension is refused before any work."""
    assert main(["project", TITAN_PINNED, "--from", "titan", "--to", "summit", "-o", str(tmp_path / "x.xlsx")]) == 2
    assert ".xlsx" in _one_error_line(capsys)


def test_console_script_exit_code_and_no_traceback(tmp_path):
    """The installed `nodecast` entry point exits 2 with one stderr line on a missing file."""
    proc = subprocess.run([sys.executable, "-m", "nodecast.cli", "inspect", str(tmp_path / "nope.sqlite")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "nope.sqlite" in proc.stderr


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["project", TITAN_PINNED, "--from", "titan", "--to", "summit", "-o", "OK/ops.csv",
          "--summary", "MISSING/summary.csv"], "--summary"),
        (["project", TITAN_PINNED, "--from", "titan", "--to", "summit", "-o", "MISSING/ops.csv", "--summary", "OK/s.csv"], "-o"),
        (["evaluate", TITAN_PINNED, SUMMIT_PINNED, "--from", "titan", "--to", "summit", "--png", "OK/box.png",
          "-o", "OK/ops.csv", "--table", "MISSING/wmape.csv"], "--table"),
        (["evaluate", TITAN_PINNED, SUMMIT_PINNED, "--from", "titan", "--to", "summit", "--table", "OK/wmape.csv",
          "--png", "MISSING/box.png"], "--png"),
        (["inspect", TITAN_PINNED, "--png", "MISSING/dist.png"], "--png"),
    ],
)
def test_bad_later_output_writes_nothing(tmp_path, capsys, argv, option):
    """A bad output path fails before any work: one line naming the option, and no other output written
    (the first output used to be written, then a second error line appeared)."""
    argv = [a.replace("OK", str(tmp_path)).replace("MISSING", str(tmp_path / "missing")) for a in argv]
    assert main(argv) == 2
    line = _one_error_line(capsys)
    assert f": {option}: " in line
    assert list(tmp_path.iterdir()) == []


def test_project_huge_bytes_is_one_line(tmp_path, capsys):
    """A Kineto copy of 10**40 bytes is one error line from project (it was an OverflowError traceback)."""
    event = {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
             "ts": 1, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": 1, "bytes": 10**40}}
    path = tmp_path / "huge.json"
    path.write_text(json.dumps({"traceEvents": [event]}))
    assert main(["project", str(path), "--from", "titan", "--to", "summit"]) == 2
    assert "huge.json: args.bytes: out of range" in _one_error_line(capsys)


# -- totals, nothing to evaluate, --one-byte-us, counts in words ---------------------------------
def test_project_total_row_covers_the_same_ops(shared_traces, tmp_path, capsys):
    """The total row's source time covers the projected ops only; kernels no chosen model projects are a row apart
    (on AHEAD's LAMMPS trace the total used to add their 2.88 s to the source column and nothing to the models')."""
    summary = tmp_path / "summary.csv"
    assert main(["project", str(shared_traces / "nvprof_ahead-lammps_summit-v100.nvvp"), "--from", "summit",
                 "--to", "summit", "--models", "ahead", "--summary", str(summary)]) == 0
    s = pd.read_csv(summary).set_index("category")
    copies = s.loc[["dtoh_pageable", "dtoh_pinned", "htod_pinned"]]
    assert s.loc["total projected", "ahead_s"] == pytest.approx(copies["ahead_s"].sum())
    assert s.loc["total projected", "source_s"] == pytest.approx(copies["source_s"].sum())
    assert s.loc["not projected", "source_s"] == pytest.approx(s.loc["kernel", "source_s"])
    out = capsys.readouterr().out
    assert "total projected" in out and "not projected" in out


@pytest.mark.parametrize("outputs", [[], ["--png", "OUT/box.png"], ["--png", "OUT/box.png", "-o", "OUT/pairs.csv",
                                                                    "--table", "OUT/wmape.csv"]])
def test_evaluate_nothing_to_evaluate_is_one_line(shared_traces, tmp_path, capsys, outputs):
    """The H100/MI300X pair has nothing the transfer models and the roofline (no metrics) project: one line
    saying why, exit 2, no file written (it was a matplotlib traceback with --png, and an all-'—' table with
    exit 0 without)."""
    argv = ["evaluate", str(shared_traces / "kineto_nsfw-image-detection_h100.json.gz"),
            str(shared_traces / "kineto_nsfw-image-detection_mi300x.json.gz"), "--from", "h100-sxm5-server",
            "--to", "mi300x", "--models", "ahead,peak-bandwidth,roofline",
            *[a.replace("OUT", str(tmp_path)) for a in outputs]]
    assert main(argv) == 2
    line = _one_error_line(capsys)
    assert line.startswith("nodecast: error: nothing to evaluate: A has kernel x154, memset x2; B has kernel x155")
    assert "no model projected any op of A" in line
    assert list(tmp_path.iterdir()) == []


def test_one_byte_us_sets_the_cost(tmp_path, capsys):
    """--one-byte-us KIND=µs (repeatable, or all=) replaces L+O, and the note says where it came from."""
    out = tmp_path / "ops.csv"
    assert main(["project", TITAN_PINNED, "--from", "titan", "--to", "summit", "--models", "ahead,ahead-no-latency",
                 "--one-byte-us", "htod_pinned=1.792", "--one-byte-us", "dtod=3", "-o", str(out),
                 "--notes", "all"]) == 0
    ops = pd.read_csv(out)
    one = ops[ops["bytes"] == 1]
    assert (one["ahead_s"] - one["ahead-no-latency_s"]).to_numpy() == pytest.approx(1.792e-6)
    assert "1-byte cost (L+O) of htod_pinned: 1.792 µs, given (--one-byte-us htod_pinned=1.792)" in \
        capsys.readouterr().out


def test_evaluate_one_byte_us_with_summits_own_cost(capsys, tmp_path):
    """Giving Summit's own 1-byte cost (1.792 µs, its sample's median) lowers AHEAD's MAPE below Titan's 0.96 µs."""
    table = tmp_path / "t.csv"
    assert main(["evaluate", TITAN_PINNED, SUMMIT_PINNED, "--from", "titan", "--to", "summit", "--models", "ahead",
                 "--table", str(table)]) == 0
    before = pd.read_csv(table).set_index("model").loc["ahead", "MAPE"]
    assert main(["evaluate", TITAN_PINNED, SUMMIT_PINNED, "--from", "titan", "--to", "summit", "--models", "ahead",
                 "--one-byte-us", "all=1.792", "--table", str(table)]) == 0
    after = pd.read_csv(table).set_index("model").loc["ahead", "MAPE"]
    assert after < before / 2


@pytest.mark.parametrize(("value", "message"), [
    ("htod_pinned", "expected KIND=µs"),
    ("htod=2", "unknown transfer kind 'htod'"),
    ("htod_pinned=fast", "not a number of µs"),
    ("htod_pinned=0", "must be above 0"),
    ("all=nan", "must be above 0"),
])
def test_bad_one_byte_us(tmp_path, capsys, value, message):
    """A malformed --one-byte-us is one line naming the option, exit 2, nothing written."""
    assert main(["project", TITAN_PINNED, "--from", "titan", "--to", "summit", "--one-byte-us", value,
                 "-o", str(tmp_path / "ops.csv")]) == 2
    line = _one_error_line(capsys)
    assert "--one-byte-us" in line and message in line
    assert list(tmp_path.iterdir()) == []


def _kineto_copies(path: Path, sizes: list[int]) -> str:
    """A Kineto JSON (CUPTI's format) of pinned HtoD copies of the given sizes on one stream."""
    events = [{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7,
               "ts": 10 * i, "dur": 3, "args": {"device": 0, "stream": 7, "correlation": i + 1, "bytes": n}}
              for i, n in enumerate(sizes)]
    path.write_text(json.dumps({"traceEvents": events}))
    return str(path)


def test_evaluate_counts_in_words(tmp_path, capsys):
    """One re-aligned group reads "1 group re-aligned", not "1 groups"."""
    a = _kineto_copies(tmp_path / "a.json", [10, 20, 30, 40])
    b = _kineto_copies(tmp_path / "b.json", [10, 20, 99, 30, 40])
    assert main(["evaluate", a, b, "--from", "titan", "--to", "summit"]) == 0
    out = capsys.readouterr().out
    assert "1 group re-aligned on its byte or kernel-name sequence" in out
    assert "aligned 4 op pairs; evaluated 4 projected ops; unmatched: 0 in A, 1 in B" in out


def test_evaluate_notes_lead_with_the_whole_runs_host_time(capsys):
    """The README quick start: the whole run's end-to-end error comes from host work kept from Titan's host, and
    the note that says so is decisive, with its share, printed under the first table and first in --json."""
    assert main(["evaluate", TITAN_PINNED, SUMMIT_PINNED, "--from", "titan", "--to", "summit", "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    first = notes[0]
    assert first["severity"] == "decisive" and first["about"] == "host-time" and first["share"] > 0.5
    assert first["text"].startswith("whole run: host work kept as measured on A")
    assert all(n["severity"] == "info" for n in notes[1:] if n["about"] != "host-time")
    assert main(["evaluate", TITAN_PINNED, SUMMIT_PINNED, "--from", "titan", "--to", "summit"]) == 0
    lines = capsys.readouterr().out.splitlines()
    notes_at = [i for i, x in enumerate(lines) if x.startswith("note: ")]
    assert [lines[i] for i in notes_at] == [f"note: {first['text']}"]  # the others: --notes all
    wmape, whole = (next(i for i, x in enumerate(lines) if x.startswith(t)) for t in ("WMAPE (%)", "Whole run: "))
    assert wmape < notes_at[0] < whole


def test_project_weighs_the_assumed_host(shared_traces, capsys):
    """project without --from assumes the T4's host; the vectoradd copies, nearly all its GPU time, rest on it:
    the note is decisive, says its share, and prints under the table; the others are counted on the last line."""
    trace = str(shared_traces / "nvprof_vectoradd-1M_t4.nvvp")
    assert main(["project", trace, "--to", "h100-sxm5-server", "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    host = notes[0]
    assert host["severity"] == "decisive" and host["about"] == "host-assumed" and host["share"] > 0.9
    assert f"{percent(host['share'])} of the GPU time on A" in host["text"]
    assert main(["project", trace, "--to", "h100-sxm5-server"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [x for x in lines if x.startswith("note: ")] == [f"note: {host['text']}"]
    assert lines[-1] == f"{len(notes) - 1} more notes: --notes all prints them"
