"""A profiler SQLite export with text that is not UTF-8, or with a column dropped, is refused in one line that
names the table and column and says what to do, not as "the SQLite database is corrupt or truncated"."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from nodecast.cli import main

NSYS = "nsys_vectoradd-streams_t4.sqlite"
NVPROF = "nvprof_vectoradd-1M_t4.nvvp"


def _edited(shared_traces, tmp_path, name: str, *sql: str):  # noqa: ANN202
    path = tmp_path / name
    shutil.copy(shared_traces / name, path)
    path.chmod(0o644)
    con = sqlite3.connect(path)
    try:
        for statement in sql:
            con.execute(statement)
        con.commit()
    finally:
        con.close()
    return path


def _one_line_error(argv, capsys) -> str:  # noqa: ANN001
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("nodecast: error: ") and err.count("\n") == 1
    assert "corrupt" not in err and "truncated" not in err
    return err


@pytest.mark.parametrize(("name", "table", "column", "where"), [
    # a kernel's name in the string table
    (NSYS, "StringIds", "value", "id = (SELECT shortName FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1)"),
    # a GPU's name
    (NSYS, "TARGET_INFO_GPU", "name", "rowid = (SELECT min(rowid) FROM TARGET_INFO_GPU)"),
    # a number column of an activity table
    (NVPROF, "CUPTI_ACTIVITY_KIND_RUNTIME", "start", "rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_RUNTIME)"),
])
def test_text_that_is_not_utf8_names_table_column_and_row(shared_traces, tmp_path, capsys, name, table, column,
                                                          where):
    """Bytes 0xff 0x80 in a text value: the message names the table and column, the row and the bytes."""
    path = _edited(shared_traces, tmp_path, name,
                   f'UPDATE "{table}" SET "{column}" = CAST(X\'6b65726e656cff80\' AS TEXT) WHERE {where}')
    (rowid,) = sqlite3.connect(path).execute(f'SELECT rowid FROM "{table}" WHERE {where}').fetchone()
    err = _one_line_error(["replay", str(path)], capsys)
    assert f"{table}.{column}" in err and "not UTF-8" in err and f"rowid {rowid}" in err
    assert "kernel\\xff\\x80" in err


@pytest.mark.parametrize(("name", "table", "column"), [
    (NSYS, "ENUM_CUDA_MEM_KIND", "name"),  # was "corrupt or truncated (no such column: name)"
    (NSYS, "StringIds", "value"),  # was read as the string 'value' for every name, exit 0
    (NVPROF, "StringTable", "value"),
])
def test_dropped_column_names_the_table_and_column(shared_traces, tmp_path, capsys, name, table, column):
    """A column nodecast reads, dropped: one line naming the table and the column, exit 2."""
    keep = ", ".join(f'"{c[1]}"' for c in sqlite3.connect(shared_traces / name).execute(f'PRAGMA table_info("{table}")')
                     if c[1] != column)
    # A copy of the table without the column (ALTER TABLE DROP COLUMN refuses a UNIQUE one).
    path = _edited(shared_traces, tmp_path, name, f'CREATE TABLE tmp_copy AS SELECT {keep} FROM "{table}"',
                   f'DROP TABLE "{table}"', f'ALTER TABLE tmp_copy RENAME TO "{table}"')
    err = _one_line_error(["inspect", str(path)], capsys)
    assert table in err and f"no {column} column" in err
