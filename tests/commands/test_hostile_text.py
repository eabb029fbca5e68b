"""Names read from input reach the terminal as text: a GPU, kernel, file or machine name holding rich markup
(``[/]``, ``[bold]``, ``[link=...]``), escape sequences or bytes that are not UTF-8 is printed as it reads,
never applied, never crashes a command and never takes long to print (``nodecast.text.shown``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

import pytest

from nodecast.cli import main

TRACE = "nvprof-gputrace-csv_vectoradd_k40c.csv"

#: markup rich would apply or choke on, an OSC that sets the window title, a CSI that clears the screen, an emoji code
HOSTILE = "[/] [bold]x[/bold] [link=https://example.com]y[/link] \x1b]0;title\x07 \x1b[2J :smile:"
#: how each part of HOSTILE must read in the output
VISIBLE = ("[/]", "[bold]x[/bold]", "[link=https://example.com]y[/link]", "\\x1b]0;title\\x07", "\\x1b[2J", ":smile:")


def _run(argv: list[str], capsys) -> str:
    """stdout and stderr of ``nodecast ARGV``, which must succeed."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out + err


def _assert_text(output: str, *must_read: str) -> None:
    """No escape character or bell reached the terminal (so no OSC-8 link either); every hostile part reads as text."""
    assert "\x1b" not in output and "\x07" not in output
    assert "Traceback" not in output
    assert "\U0001f604" not in output  # ':smile:' is not turned into an emoji
    for part in must_read:
        assert part in output, part


@pytest.fixture
def hostile(tmp_path, shared_traces) -> dict[str, str]:
    """The nvprof CSV with HOSTILE in its GPU and kernel names and its file name, and a machine file (titan's
    values) with HOSTILE in its name and file name."""
    text = (shared_traces / TRACE).read_text()
    trace = tmp_path / "trace [bold]f[red]\x1b[2J.csv"
    trace.write_text(text.replace("Tesla K40c", f"GPU {HOSTILE}").replace("VecAdd", f"K{HOSTILE}"))
    catalogue = Path(str(resources.files("nodecast") / "machines" / "catalogue" / "titan.toml")).read_text()
    toml_name = HOSTILE.replace("\x1b", "\\u001b").replace("\x07", "\\u0007")
    catalogue = re.sub(r"^name = .*$", lambda _: f'name = "m {toml_name}"', catalogue, count=1, flags=re.MULTILINE)
    machine = tmp_path / "machine [bold]\x1b[2J.toml"
    machine.write_text(catalogue)
    return {"trace": str(trace), "machine": str(machine)}


@pytest.mark.parametrize("argv", [
    ["inspect", "{trace}"],
    ["replay", "{trace}"],
    ["project", "{trace}", "--from", "titan", "--to", "{machine}"],
    ["forecast", "{trace}", "--from", "titan", "--to", "{machine}"],
    ["forecast", "{trace}", "--from", "titan", "--to", "{machine},summit", "--notes", "all"],  # the name: in notes
    ["evaluate", "{trace}", "{trace}", "--from", "{machine}", "--to", "{machine}"],
], ids=["inspect", "replay", "project", "forecast", "forecast-targets", "evaluate"])
def test_trace_commands_print_hostile_names_as_text(hostile, capsys, argv):
    """inspect, replay, project, forecast (one target and several) and evaluate print the GPU name, the file name
    and the machine name as text: exit 0, no traceback, no escape character, the markup visible."""
    output = _run([a.format(**hostile) for a in argv], capsys)
    _assert_text(output, "trace [bold]f[red]\\x1b[2J.csv")  # the file name (no "/" in a file name)
    if argv[0] in ("inspect", "replay", "forecast"):  # these name the trace's GPUs
        _assert_text(output, *VISIBLE)
    if "{machine}" in " ".join(argv):
        _assert_text(output, "m [/] [bold]x[/bold]")


def test_forecast_prints_a_hostile_kernel_name_as_text(hostile, capsys):
    """The kernel name in the table of the ops that moved the end to end most reads as text."""
    output = _run(["forecast", hostile["trace"], "--from", "titan", "--to", "summit"], capsys)
    _assert_text(output, "K[/] [bold]x[/bold]")


@pytest.mark.parametrize("argv", [
    ["machines", "show", "{machine}"],
    ["machines", "diff", "{machine}", "summit"],
    ["curves", "--machines", "{machine},summit", "--classes", "htod_pinned"],
])
def test_machine_commands_print_a_hostile_machine_name_as_text(hostile, capsys, argv):
    """machines show/diff and curves print a machine file's hostile name as text."""
    output = _run([a.format(**hostile) for a in argv], capsys)
    _assert_text(output, "m [/] [bold]x[/bold] [link=https://example.com]y[/link] \\x1b]0;title\\x07 \\x1b[2J")
    if argv[1] == "show":
        _assert_text(output, "machine [bold]\\x1b[2J.toml")  # the file name


def test_a_gpu_name_of_100000_characters_prints_at_once(tmp_path, shared_traces, capsys):
    """Rich's highlighter took 44 s over the header line holding a 100,000-character GPU name; now the name is cut
    to a few hundred characters that say its length, and inspect and replay take about a second."""
    trace = tmp_path / "long.csv"
    trace.write_text((shared_traces / TRACE).read_text().replace("Tesla K40c", "G" * 100_000))
    for command in ("inspect", "replay"):
        start = time.perf_counter()
        output = _run([command, str(trace)], capsys)
        assert time.perf_counter() - start < 10
        assert "G" * 100 in output and "characters)" in output and "G" * 10_000 not in output


def test_an_error_quotes_a_hostile_name_on_one_short_line(tmp_path, shared_traces, capsys):
    """An error quoting a file name of escape sequences and newlines, or a GPU name of 100,000 characters, is one line,
    its escapes visible, the name cut to a few hundred characters that say its length."""
    assert main(["inspect", str(tmp_path / "no\x1b[2J\nsuch.csv")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "\x1b" not in err and "no\\x1b[2J\\nsuch.csv" in err
    trace = tmp_path / "long.csv"
    trace.write_text((shared_traces / TRACE).read_text().replace("Tesla K40c", "G" * 100_000 + "\x1b[2J"))
    assert main(["project", str(trace), "--to", "summit"]) == 2  # no data sheet for that GPU: --from is needed
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and len(err) < 2_000 and "\x1b" not in err
    assert "G" * 100 in err and "characters)" in err


_NON_UTF8 = os.fsdecode(b"trace\xff.csv")


def test_a_non_utf8_file_name_prints_under_a_strict_utf8_output(tmp_path, shared_traces):
    """A file name that is not UTF-8 (kept by Python as a lone surrogate) prints as \\xff under
    PYTHONIOENCODING=utf-8:strict: no UnicodeEncodeError, for the tables, a 'wrote' line and an error."""
    trace = tmp_path / _NON_UTF8
    trace.write_bytes((shared_traces / TRACE).read_bytes())
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    for argv, stream, must_read in (
            (["inspect", str(trace)], "stdout", "trace\\xff.csv"),
            (["replay", str(trace), "-o", str(tmp_path / os.fsdecode(b"ops\xfe.csv"))], "stdout",
             "ops\\xfe.csv"),
            (["inspect", str(tmp_path / os.fsdecode(b"absent\xfe.csv"))], "stderr", "absent\\xfe.csv")):
        proc = subprocess.run([sys.executable, "-m", "nodecast.cli", *argv], capture_output=True, env=env,
                              timeout=300, check=False)
        out, err = proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")
        assert "Traceback" not in err, err
        assert proc.returncode == (2 if stream == "stderr" else 0), err
        assert must_read in (out if stream == "stdout" else err)
    assert (tmp_path / os.fsdecode(b"ops\xfe.csv")).is_file()
