"""Ctrl-C while an SQLite export is read through the Arrow SQLite driver (ADBC).

The driver manager's DB-API layer swaps in its own SIGINT handler while a
query executes: the signal then only asks the driver to cancel (which the
SQLite driver does not implement), the read went on through sqlite3 and the
run finished with exit 0; and its interrupt thread called a cancel callback
that the read had already freed (segmentation faults).
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("adbc_driver_sqlite")

from nodecast.traces._sqlite import SqliteExport  # noqa: E402

ROWS = 100


def _export(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute('CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, "end" INTEGER)')
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?)", [(i, i + 1) for i in range(ROWS)])
    con.commit()
    con.close()
    return path


# Reads the table with a WHERE clause that SQLite evaluates once, before the first row (about a second of C in the
# driver's execute), and raises SIGINT from a second thread once the read has begun.
_INTERRUPTED_READ = """
import os, signal, sys, threading, time
import numpy as np
from nodecast.traces._sqlite import SqliteExport

SLOW = "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 6000000) SELECT count(*) FROM c) > 0"
main = threading.main_thread().ident

def in_read():
    frame = sys._current_frames().get(main)
    while frame is not None:
        if frame.f_code.co_name == "_read_adbc":
            return True
        frame = frame.f_back
    return False

def interrupt():
    while not in_read():
        time.sleep(0.001)
    time.sleep(0.1)
    os.kill(os.getpid(), signal.SIGINT)

threading.Thread(target=interrupt, daemon=True).start()
with SqliteExport(sys.argv[1]) as db:
    try:
        db.read_into("CUPTI_ACTIVITY_KIND_KERNEL", [("start", 0)], [np.empty(%d, np.int64)], where=SLOW)
    except KeyboardInterrupt:
        print("interrupted")
        sys.exit(130)
print("read to the end")
""" % ROWS


def test_ctrl_c_during_a_read_is_not_ignored(tmp_path):
    """SIGINT while the driver executes the query: the read ends in KeyboardInterrupt (exit 130), not in a
    sqlite3 re-read that finishes the run as if nothing had been asked."""
    proc = subprocess.run([sys.executable, "-c", _INTERRUPTED_READ, str(_export(tmp_path / "t.sqlite"))],
                          capture_output=True, text=True, timeout=120, check=False)
    assert (proc.returncode, proc.stdout) == (130, "interrupted\n"), proc.stderr
    assert proc.stderr == ""


def test_reads_leave_sigint_to_python(tmp_path):
    """A read never starts the driver manager's interrupt thread (`AdbcInterrupt`, whose cancel callback outlived
    the read and crashed the process) and leaves Python's SIGINT handler in place."""
    import signal

    tasks = Path("/proc/self/task")
    if not tasks.is_dir():
        pytest.skip("needs Linux's /proc to list the process's threads")
    before = signal.getsignal(signal.SIGINT)
    with SqliteExport(_export(tmp_path / "t.sqlite")) as db:
        out = np.empty(ROWS, np.int64)
        db.read_into("CUPTI_ACTIVITY_KIND_KERNEL", [("start", 0)], [out])
    assert (out == np.arange(ROWS)).all()
    names = {(t / "comm").read_text().strip() for t in tasks.iterdir() if (t / "comm").exists()}
    assert "AdbcInterrupt" not in names
    assert signal.getsignal(signal.SIGINT) is before
