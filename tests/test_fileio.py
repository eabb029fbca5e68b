"""Atomic output files: nothing half-written, usual permissions."""

from __future__ import annotations

import os
import stat

import pytest

from nodecast.errors import InputError
from nodecast.fileio import atomic_path, check_writable, write_text_atomic


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
