"""Stopping a run: Ctrl-C (SIGINT), SIGTERM (``timeout``, Slurm), SIGHUP (a closed terminal), SIGKILL.

A stopped run leaves no temporary file and none of the outputs it had
finished, prints one line and exits 128 + the signal number (130, 143, 129).
Each case runs nodecast in a child process that is signalled at a chosen
moment, so that the moment is the same on every run.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

import nodecast
from nodecast.fileio import atomic_path, write_text_atomic

#: A trace shipped with nodecast (its path, so that nothing but the signal can stop the run).
SAMPLE = Path(nodecast.__file__).parent / "data" / "samples" / "nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x.nvvp"

_EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}

# Runs `nodecast ARGS` with the signal raised when the second output of the folder is about to be renamed into
# place: the first output is finished, the second is complete in its temporary file.
_STOP_AT_THE_SECOND_OUTPUT = """
import os, signal, sys
from pathlib import Path

signum, folder = int(sys.argv[1]), Path.cwd().resolve()
real_replace, renamed = os.replace, []

def replace(src, dst, *args, **kwargs):
    if Path(dst).resolve().parent == folder:
        renamed.append(dst)
        if len(renamed) == 2:
            signal.raise_signal(signum)
    return real_replace(src, dst, *args, **kwargs)

os.replace = replace
from nodecast.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_a_stopped_run_removes_its_temporary_file_and_its_finished_outputs(tmp_path, signum):
    """`timeout`/Slurm's SIGTERM, SIGHUP and Ctrl-C while the second of two outputs is written: no `.NAME.*.part`,
    not the first output either (a complete-looking file from a run that did not finish), one line naming what was
    removed, exit 143, 129, 130."""
    argv = ["replay", str(SAMPLE), "--json", "replay.json", "-o", "ops.csv"]
    proc = subprocess.run([sys.executable, "-c", _STOP_AT_THE_SECOND_OUTPUT, str(int(signum)), *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == _EXIT[signum], proc.stderr
    assert _files(tmp_path) == []
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert any("replay.json" in line and "removed" in line for line in lines), proc.stderr
    assert lines[-1] == ("nodecast: interrupted" if signum == signal.SIGINT else f"nodecast: stopped by {signum.name}")


# Runs `nodecast ARGS` with Ctrl-C landing inside a C callback that drops the exception (numba's compiler has one,
# a ctypes callback of llvmlite), after the replay (argv[1] "finishes") or before it, which then fails ("fails").
_CTRL_C_SWALLOWED = """
import ctypes, signal, sys
import nodecast.workflows.replay as result

def swallow_ctrl_c():
    def compare(a, b):
        signal.raise_signal(signal.SIGINT)
        return 0
    ints = (ctypes.c_int * 2)(2, 1)
    callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(compare)
    ctypes.CDLL(None).qsort(ints, 2, ctypes.sizeof(ctypes.c_int), callback)

real_replay = result.replay_trace

def replay_trace(*args, **kwargs):
    if sys.argv[1] == "fails":
        swallow_ctrl_c()
        raise RuntimeError("no compiled object yet")
    replayed = real_replay(*args, **kwargs)
    swallow_ctrl_c()
    return replayed

result.replay_trace = replay_trace
from nodecast.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("then", ["finishes", "fails"])
def test_a_ctrl_c_that_something_swallows_still_stops_the_run(tmp_path, then):
    """Ctrl-C inside a callback that prints and drops the exception: the run does not go on to write its outputs
    and exit 0 ("finishes"), nor end in the traceback of the error that follows ("fails"); it stops, exit 130."""
    argv = ["replay", str(SAMPLE), "--json", "replay.json", "-o", "ops.csv"]
    proc = subprocess.run([sys.executable, "-c", _CTRL_C_SWALLOWED, then, *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)
    assert (proc.returncode, proc.stderr) == (130, "nodecast: interrupted\n")
    assert _files(tmp_path) == []


# The console script (the entry point the package declares), with the signal raised while numpy is being imported:
# the first second of every run, when a Ctrl-C is most likely.
_STOP_DURING_IMPORT = """
import signal, sys
from importlib.metadata import entry_points

SIGNUM = int(sys.argv[1])

class StopAtNumpy:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy":
            signal.raise_signal(SIGNUM)
        return None

sys.meta_path.insert(0, StopAtNumpy())
(script,) = entry_points(group="console_scripts", name="nodecast")
sys.argv = ["nodecast", "machines"]
sys.exit(script.load()())
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_signal_during_the_imports_is_one_line_without_traceback(tmp_path, signum):
    """Ctrl-C (or SIGTERM) while the console script imports numpy and pandas: one line, exit 130 (143)."""
    proc = subprocess.run([sys.executable, "-c", _STOP_DURING_IMPORT, str(int(signum))], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == _EXIT[signum], proc.stderr
    expected = "nodecast: interrupted" if signum == signal.SIGINT else f"nodecast: stopped by {signum.name}"
    assert proc.stderr == expected + "\n"


_WRITE_AND_WAIT = """
import sys, time
from nodecast.fileio import atomic_path

with atomic_path(sys.argv[1]) as tmp:
    tmp.write_text("half an output")
    print("writing", flush=True)
    time.sleep(120)
"""


def _parts(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".part"))


def test_the_temporary_file_of_a_killed_run_is_removed_by_the_next_write(tmp_path):
    """SIGKILL cannot be caught: the writer's `.out.csv.*.part` stays. The next write into that folder removes it once
    its writer is dead, and never while the writer still runs (a second nodecast writing beside it)."""
    target = tmp_path / "out.csv"
    writer = subprocess.Popen([sys.executable, "-c", _WRITE_AND_WAIT, str(target)], stdout=subprocess.PIPE)
    try:
        assert writer.stdout.readline() == b"writing\n"
        left = _parts(tmp_path)
        assert len(left) == 1 and left[0].startswith(".out.csv.")
        write_text_atomic(tmp_path / "other.csv", "x")
        assert _parts(tmp_path) == left  # its writer is alive: not touched
    finally:
        writer.kill()
        writer.wait()
        writer.stdout.close()
    assert _parts(tmp_path) == left
    write_text_atomic(tmp_path / "other.csv", "y")
    assert _files(tmp_path) == ["other.csv"]


def test_temporary_files_that_are_not_nodecasts_are_left_alone(tmp_path):
    """Only names nodecast gives its own temporary files are cleaned: another program's `.x.part` stays."""
    (tmp_path / ".x.part").write_text("someone else's")
    (tmp_path / ".data.csv.abcdefgh.part").write_text("an older nodecast's or another program's")
    with atomic_path(tmp_path / "a.csv") as tmp:
        tmp.write_text("a")
    assert _files(tmp_path) == [".data.csv.abcdefgh.part", ".x.part", "a.csv"]
