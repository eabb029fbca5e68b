"""``nodecast record -o OUT -- python program.py`` through ``nodecast.cli.main``, without a GPU."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from nodecast import cli


@pytest.fixture(autouse=True)
def only_record_command(monkeypatch):
    """Build the parser with the record subcommand only, so these tests do not depend on the others."""
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("record",))


def run(argv: list[str]) -> int:
    """cli.main's exit code, including argparse's SystemExit on usage errors."""
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.fixture
def marker_program(tmp_path):
    """A program that leaves a marker file when it runs (so tests can tell it never ran)."""
    p = tmp_path / "prog.py"
    p.write_text(f"open({str(tmp_path / 'ran')!r}, 'w').write('yes')\n")
    return p


def user_error(capsys, argv, *fragments) -> str:
    """Exit code 2, one stderr line containing every fragment."""
    code = run(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert err.count("\n") == 0 and "Traceback" not in err
    for f in fragments:
        assert f in err
    return err


def test_no_gpu_here_for_real(capsys, tmp_path, marker_program):
    """Here (no cupti-python, or no driver) record exits 2 with one line saying what is missing, and writes nothing."""
    out = tmp_path / "t.sqlite"
    err = user_error(capsys, ["record", "-o", str(out), "--", sys.executable, str(marker_program)])
    if importlib.util.find_spec("cupti") is None:
        assert "cupti-python is not installed" in err and "pip install '.[gpu]'" in err
    else:
        assert "CUPTI cannot trace" in err
    assert not out.exists() and not (tmp_path / "ran").exists()


def test_not_a_python_program(capsys, tmp_path):
    """A compiled program is refused with the nsys command to use instead."""
    user_error(capsys, ["record", "-o", str(tmp_path / "t.sqlite"), "--", "/bin/true"],
               "not a Python program", "nsys profile")


def test_missing_output_folder_stops_before_the_program_runs(capsys, tmp_path, marker_program):
    """An output folder that does not exist is reported and the program is not started."""
    user_error(capsys, ["record", "-o", str(tmp_path / "no" / "t.sqlite"), "--", "python", str(marker_program)],
               "folder does not exist")
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("name", ["t.xyz", "t.json", "t"])
def test_output_that_is_not_sqlite_is_refused_first(capsys, tmp_path, monkeypatch, marker_program, name):
    """-o t.xyz is refused (the file would hold SQLite under another name) before the missing cupti-python,
    and the program is not started."""
    monkeypatch.setitem(sys.modules, "cupti", None)
    err = user_error(capsys, ["record", "-o", str(tmp_path / name), "--", "python", str(marker_program)],
                     f"{name}: -o: the trace is written as SQLite", ".sqlite")
    assert "cupti" not in err
    assert not (tmp_path / name).exists() and not (tmp_path / "ran").exists()


def test_missing_script_is_refused_first(capsys, tmp_path):
    """A script that does not exist is named (before the missing cupti-python), without running anything."""
    user_error(capsys, ["record", "-o", str(tmp_path / "t.sqlite"), "--", "python", str(tmp_path / "nope.py")],
               "nope.py: no such file")


def test_no_command(capsys, tmp_path):
    """Nothing after -- is one clear error."""
    user_error(capsys, ["record", "-o", str(tmp_path / "t.sqlite"), "--"], "no program to record")
