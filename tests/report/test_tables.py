"""Terminal output helpers."""

from __future__ import annotations

import subprocess
import sys

_WRITE_UNTIL_CUT = """
import sys
from nodecast.report.tables import console
out = console()
try:
    for i in range(200_000):
        out.print("line", i)
except BrokenPipeError:
    sys.exit(0)
sys.exit(3)
"""


def test_console_cut_short_by_the_reader_raises_broken_pipe_not_exit_1():
    # `nodecast ... | head -1`: rich's own Console would exit with status 1 here.
    proc = subprocess.Popen([sys.executable, "-c", _WRITE_UNTIL_CUT], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().startswith(b"line 0")
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert b"Traceback" not in err
