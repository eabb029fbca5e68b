"""Atomic output files: nothing half-written, usual permissions."""

from __future__ import annotations

import os
import stat

import pytest

from nodecast.errors import InputError
from nodecast.fileio import atomic_path, check_outputs, check_writable, write_text_atomic


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_new_file_gets_the_umask_mode(tmp_path):
    old = os.umask(0o027)
    try:
        write_text_atomic(tmp_path / "a.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").read_text() == "x"
    assert _mode(tmp_path / "a.txt") == 0o640


def test_replaced_file_keeps_its_mode(tmp_path):
    target = tmp_path / "a.txt"
    target.write_text("old")
    target.chmod(0o604)
    write_text_atomic(target, "new")
    assert target.read_text() == "new"
    assert _mode(target) == 0o604


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "a.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("writer failed")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_missing_folder_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="folder does not exist"):
        write_text_atomic(tmp_path / "nope" / "a.txt", "x")


def test_an_existing_folder_is_refused_as_output(tmp_path):
    (tmp_path / "out.csv").mkdir()
    with pytest.raises(InputError, match="is a folder"):
        write_text_atomic(tmp_path / "out.csv", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_a_file_in_place_of_the_folder_is_named(tmp_path):
    (tmp_path / "afile.txt").write_text("a")
    with pytest.raises(InputError, match="is a file, not a folder") as info:
        check_writable(tmp_path / "afile.txt" / "out.csv", "-o")
    assert "afile.txt" in info.value.message and "-o" in info.value.message


# -- check_outputs: an output never replaces an input or another output ---------------------------------


def _input(tmp_path, name="t.csv", text="trace"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("spelling", ["same", "dot", "absolute", "parent", "symlink", "hardlink", "symlinked folder"])
def test_an_output_that_is_an_input_is_refused_whatever_its_spelling(spelling, tmp_path, monkeypatch):
    """Same file by identity, not by spelling: ./t.csv, t.csv, the absolute path, a/../t.csv, a symbolic or a hard
    link to it, and the file seen through a linked folder are all the input."""
    monkeypatch.chdir(tmp_path)
    _input(tmp_path)
    (tmp_path / "a").mkdir()
    out = {"same": "t.csv", "dot": "./t.csv", "absolute": str(tmp_path / "t.csv"), "parent": "a/../t.csv",
           "symlink": "link.csv", "hardlink": "hard.csv", "symlinked folder": "linked/t.csv"}[spelling]
    os.symlink("t.csv", "link.csv")
    os.link("t.csv", "hard.csv")
    os.symlink(".", "linked")
    with pytest.raises(InputError) as info:
        check_outputs({"-o": out}, ["t.csv"])
    message = info.value.message
    assert "\n" not in message and message.startswith(f"{out}: -o: ") and "input t.csv" in message
    assert (tmp_path / "t.csv").read_text() == "trace"


def test_the_input_side_is_compared_by_identity_too(tmp_path, monkeypatch):
    """The input given through a link or another spelling is still the output's file."""
    monkeypatch.chdir(tmp_path)
    _input(tmp_path)
    os.symlink("t.csv", "link.csv")
    for given in ("link.csv", "./t.csv", str(tmp_path / "t.csv")):
        with pytest.raises(InputError, match="input"):
            check_outputs({"--table": "t.csv"}, [given])


def test_other_files_none_samples_and_missing_inputs_pass(tmp_path, monkeypatch):
    """Outputs beside the inputs (even inside an input folder), options not given (None), package samples and
    inputs that do not exist (the reader says so) are not refused."""
    monkeypatch.chdir(tmp_path)
    _input(tmp_path)
    (tmp_path / "runs").mkdir()
    _input(tmp_path / "runs", "a.csv")
    check_outputs({"-o": "out.csv", "--table": None, "--json": "runs/new.json", "--html": "runs/a.html"},
                  ["t.csv", "runs", "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x", "missing.csv", None])


def test_an_input_read_from_inside_an_input_folder_is_refused(tmp_path):
    """A folder input is passed as the files read in it: one of those as output is refused."""
    _input(tmp_path / "", "a.csv")
    with pytest.raises(InputError, match="--table: .*input"):
        check_outputs({"--table": tmp_path / "a.csv"}, [tmp_path, tmp_path / "a.csv"])


@pytest.mark.parametrize("first,second,exists", [
    ("o.csv", "o.csv", False), ("o.csv", "./o.csv", False), ("o.csv", "sub/../o.csv", False),
    ("o.csv", "o.csv", True), ("o.csv", "hard.csv", True), ("o.csv", "link.csv", False),
])
def test_two_outputs_on_one_file_are_refused(first, second, exists, tmp_path, monkeypatch):
    """--table X -o X: the second write would replace the first. Compared by identity when the file exists, by the
    resolved path (symbolic links followed) when it does not yet."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    os.symlink("o.csv", "link.csv")  # dangling until o.csv exists
    if exists:
        (tmp_path / "o.csv").write_text("old")
        os.link("o.csv", "hard.csv")
    with pytest.raises(InputError) as info:
        check_outputs({"--table": first, "-o": second}, [])
    message = info.value.message
    assert "\n" not in message and "--table and -o" in message and "same file" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["sub", "link.csv", *(["o.csv", "hard.csv"] if exists else [])])


def test_distinct_outputs_pass(tmp_path):
    check_outputs({"-o": tmp_path / "a.csv", "--table": tmp_path / "b.csv", "--json": tmp_path / "a.json"}, [])


def test_paths_that_cannot_be_looked_at_are_left_to_the_writer(tmp_path):
    """A name too long for the file system or with a NUL byte is not this check's to report: no exception here."""
    long = str(tmp_path / ("x" * 300 + ".csv"))
    check_outputs({"-o": long, "--table": "a\0b.csv"}, [long, "c\0d.csv"])
