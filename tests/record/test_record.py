"""The recorder's parent and child sides without a GPU: command parsing, the injector, records -> SQLite.

A stand-in ``cupti`` package (written to a temporary folder, first on the
child's PYTHONPATH) replays activity records that the recorded program hands
it, so the whole path - child process, runpy, flush, JSON lines, demangling,
SQLite, load_trace - runs here for real.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from nodecast.errors import GPUUnavailableError, InputError
from nodecast.record import _inject, check_output, convert_records, demangle, parse_command, record
from nodecast.traces.kinds import OpKind
from nodecast.traces.load import load_trace

FAKE_CUPTI = '''
"""A stand-in for cupti-python's activity API (tests only)."""
import enum, os, types

class CallbackDomain(enum.IntEnum):
    DRIVER_API = 1
    RUNTIME_API = 2

class ActivityThreadIdType(enum.IntEnum):
    DEFAULT = 0
    SYSTEM = 1

class ActivityUnifiedMemoryCounterScope(enum.IntEnum):
    PROCESS_SINGLE_DEVICE = 1
    PROCESS_ALL_DEVICES = 2

class ActivityUnifiedMemoryCounterConfig:
    def __init__(self, n=1):
        self._items = [types.SimpleNamespace() for _ in range(n)]
        self.ptr = 1
    def __getitem__(self, i):
        return self._items[i]

_callbacks = None
_pending = []
enabled = set()

def set_thread_id_type(t):
    pass

def activity_register_callbacks(requested, completed):
    global _callbacks
    _callbacks = (requested, completed)

def activity_enable(kind):
    if os.environ.get("FAKE_CUPTI_NO_DRIVER"):
        raise RuntimeError("CUDA driver is not found (libcuda.so.1: cannot open shared object file)")
    enabled.add(int(kind))

def activity_disable(kind):
    enabled.discard(int(kind))

def activity_configure_unified_memory_counter(ptr, count):
    pass

def get_callback_name(domain, cbid):
    return {41: "cudaMemcpyAsync_v3020", 211: "cudaLaunchKernel_v7000"}.get(cbid, "api%d" % cbid)

def activity_flush_all(flag):
    size, limit = _callbacks[0]()
    assert size > 0
    if _pending:
        _callbacks[1](list(_pending))
        _pending.clear()

def emit(**fields):
    """What the recorded program calls to pretend it did GPU work."""
    _pending.append(types.SimpleNamespace(**fields))
'''

PROGRAM = '''
import sys
from cupti import cupti as fake
fake.emit(kind=5, cbid=41, correlation_id=1, start=10, end=20, thread_id=1, return_value=0)
fake.emit(kind=1, copy_kind=1, src_kind=2, dst_kind=3, bytes=4096, start=30, end=90, device_id=0, context_id=1,
          stream_id=7, correlation_id=1)
fake.emit(kind=5, cbid=211, correlation_id=2, start=100, end=110, thread_id=1, return_value=0)
fake.emit(kind=10, name="_Z6vecAddPdS_S_i", start=120, end=900, device_id=0, context_id=1, stream_id=7,
          correlation_id=2, grid_x=4, grid_y=1, grid_z=1, block_x=256, block_y=1, block_z=1)
fake.emit(kind=8, id=0, name="Fake GPU", num_multiprocessors=2)
print("program argv:", sys.argv[1:])
sys.exit(int(sys.argv[1]))
'''


@pytest.fixture
def fake_cupti(tmp_path, monkeypatch):
    """A folder with the stand-in cupti package, importable here and in child processes."""
    root = tmp_path / "fakecupti"
    (root / "cupti").mkdir(parents=True)
    (root / "cupti" / "__init__.py").write_text("")
    (root / "cupti" / "cupti.py").write_text(FAKE_CUPTI)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p))
    monkeypatch.delenv("FAKE_CUPTI_NO_DRIVER", raising=False)
    for name in ("cupti", "cupti.cupti"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return root


@pytest.fixture
def program(tmp_path) -> Path:
    """The recorded program: two API calls, a copy, a kernel, a device; exits with its first argument."""
    p = tmp_path / "app.py"
    p.write_text(PROGRAM)
    return p


def test_record_end_to_end_with_a_stand_in_cupti(tmp_path, fake_cupti, program, capfd):
    """The child runs the program under the injector; the parent writes a trace load_trace reads, and returns its exit code."""
    out = tmp_path / "trace.sqlite"
    result = record([sys.executable, str(program), "3"], out)
    assert result.exit_code == 3
    assert "program argv: ['3']" in capfd.readouterr().out
    trace = load_trace(out)
    assert trace.counts() == {"kernel": 1, "memcpy": 1}
    copies = trace["kind"] == OpKind.MEMCPY
    assert int(trace["api_start_ns"][copies][0]) == 10 and int(trace["bytes"][copies][0]) == 4096
    kernels = trace["kind"] == OpKind.KERNEL
    name = trace.kernel_names()[kernels][0]
    assert name == ("vecAdd(double*, double*, double*, int)" if shutil.which("c++filt") else "_Z6vecAddPdS_S_i")
    assert trace.meta.gpus == {0: "Fake GPU"}


def test_tracing_that_cannot_start_writes_nothing(tmp_path, fake_cupti, program, monkeypatch):
    """When CUPTI cannot enable tracing (no driver) the program is not run, the error is clear and no file appears."""
    monkeypatch.setenv("FAKE_CUPTI_NO_DRIVER", "1")
    out = tmp_path / "trace.sqlite"
    with pytest.raises(GPUUnavailableError, match="CUPTI cannot trace this process .*CUDA driver is not found"):
        record([sys.executable, str(program), "0"], out)
    assert not out.exists()


def test_missing_cupti_python_says_how_to_install(tmp_path, program, monkeypatch):
    """Without cupti-python the error says to pip install the GPU extra (checked before the program runs)."""
    monkeypatch.setitem(sys.modules, "cupti", None)
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cupti" else object())
    with pytest.raises(GPUUnavailableError, match=r"cupti-python is not installed.*pip install '\.\[gpu\]'"):
        record([sys.executable, str(program), "0"], tmp_path / "t.sqlite")


@pytest.mark.parametrize(("command", "expected"), [
    (["python", "{p}", "a", "b"], ("python", (), ("{p}", "a", "b"))),
    (["--", "python3.11", "-u", "-X", "dev", "{p}"], ("python3.11", ("-u", "-X", "dev"), ("{p}",))),
    (["python", "-m", "pkg.mod", "--flag"], ("python", (), ("-m", "pkg.mod", "--flag"))),
    (["{p}", "x"], (sys.executable, (), ("{p}", "x"))),
])
def test_parse_command(program, command, expected):
    """python [options] script / -m module / a bare .py script are recognised."""
    fill = [c.replace("{p}", str(program)) for c in command]
    interp, opts, prog = expected
    got = parse_command(fill)
    assert (got.interpreter, got.options, got.program) == (interp, opts, tuple(c.replace("{p}", str(program)) for c in prog))
    assert got.argv("R")[len(opts) + 1:len(opts) + 6] == ["-m", "nodecast.record._inject", "--records", "R", "--"]


@pytest.mark.parametrize(("command", "match"), [
    ([], "no program to record"),
    (["./a.out"], "is not a Python program"),
    (["python", "-c", "print(1)"], "python -c is not supported"),
    (["python"], "no Python script"),
    (["python", "missing_script.py"], "no such file"),
])
def test_parse_command_errors(command, match):
    """Commands nodecast cannot record are one clear InputError."""
    with pytest.raises(InputError, match=match):
        parse_command(command)


def test_check_output(tmp_path):
    """A missing folder or a folder as output is refused before anything runs."""
    with pytest.raises(InputError, match="folder does not exist"):
        check_output(tmp_path / "no" / "t.sqlite")
    with pytest.raises(InputError, match="is a folder"):
        check_output(tmp_path)
    assert check_output(tmp_path / "t.sqlite") == tmp_path / "t.sqlite"


def test_demangle():
    """C++ names are demangled with one c++filt call; C names pass through."""
    if shutil.which("c++filt") is None:
        pytest.skip("no c++filt here")
    assert demangle(["_Z6vecAddPdS_S_i", "nc_peak"]) == {
        "_Z6vecAddPdS_S_i": "vecAdd(double*, double*, double*, int)", "nc_peak": "nc_peak"}


def records_file(tmp_path: Path, lines: list[dict]) -> Path:
    """A child's JSON-lines records file."""
    p = tmp_path / "records.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return p


def test_convert_records_without_final_flush(tmp_path):
    """A child that died before CUPTI's final flush still gives a trace of what was written, with a note."""
    rec = records_file(tmp_path, [
        {"status": "started", "pid": 5, "cupti_python": "13.4.0", "program": ["app.py"]},
        {"table": "MEMCPY", "start": 1, "end": 2, "deviceId": 0, "contextId": 1, "streamId": 7, "correlationId": 0,
         "globalPid": 5 << 24, "bytes": 8, "copyKind": 1, "srcKind": 1, "dstKind": 2},
    ])
    result = convert_records(rec, tmp_path / "t.sqlite")
    assert result.exit_code == 1 and "without CUPTI's final flush" in result.notes[0]
    assert load_trace(tmp_path / "t.sqlite").counts() == {"memcpy": 1}


def test_convert_records_error_and_empty(tmp_path):
    """An error status is a GPUUnavailableError; no records at all an InputError; neither writes a file."""
    rec = records_file(tmp_path, [{"status": "error", "reason": "cupti-python is not installed", "hint": "pip it"}])
    with pytest.raises(GPUUnavailableError, match="cupti-python is not installed. pip it"):
        convert_records(rec, tmp_path / "t.sqlite")
    with pytest.raises(InputError, match="left no trace records"):
        convert_records(tmp_path / "none.jsonl", tmp_path / "t.sqlite")
    assert not (tmp_path / "t.sqlite").exists()


def test_injector_arguments():
    """--records FILE [--] PROGRAM...; anything else stops with a usage message."""
    assert _inject.parse_args(["--records", "f", "--", "a.py", "x"]) == ("f", ["a.py", "x"])
    assert _inject.parse_args(["--records", "f", "-m", "m"]) == ("f", ["-m", "m"])
    with pytest.raises(SystemExit):
        _inject.parse_args(["a.py"])
    with pytest.raises(SystemExit):
        _inject.parse_args(["--records", "f", "--"])


@pytest.mark.parametrize(("body", "code"), [
    ("pass", 0), ("import sys; sys.exit(4)", 4), ("raise ValueError('x')", 1), ("import sys; sys.exit('bye')", 1),
    ("import sys; sys.exit()", 0),
])
def test_run_program_exit_codes(tmp_path, monkeypatch, body, code, capsys):
    """The program's exit code is kept; an exception is code 1 with its traceback printed."""
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    p = tmp_path / "prog.py"
    p.write_text(textwrap.dedent(body))
    assert _inject.run_program([str(p)]) == code


_STOPPING_PROGRAM = '''
import os, signal, sys, time
from cupti import cupti as fake
fake.emit(kind=8, id=0, name="Fake GPU", num_multiprocessors=2)
os.killpg(os.getpgrp(), int(sys.argv[1]))  # Ctrl-C in a terminal, `timeout`: the whole process group
time.sleep(60)
'''


@pytest.mark.parametrize(("signame", "code", "written"), [("SIGINT", 130, True), ("SIGTERM", 143, False)])
def test_a_signal_to_the_recorded_program_and_nodecast(tmp_path, fake_cupti, signame, code, written):
    """Ctrl-C stops the program, and its trace is still written (exit code the program's, 130); SIGTERM (`timeout`,
    Slurm) stops nodecast too: no trace and no temporary file, exit 143."""
    import signal
    import subprocess

    program = tmp_path / "stops.py"
    program.write_text(_STOPPING_PROGRAM)
    out = tmp_path / "out" / "trace.sqlite"
    out.parent.mkdir()
    argv = ["record", "-o", str(out), "--", sys.executable, str(program), str(int(getattr(signal, signame)))]
    proc = subprocess.run([sys.executable, "-c", "import sys; from nodecast.cli import main; sys.exit(main())", *argv],
                          capture_output=True, text=True, timeout=120, check=False, start_new_session=True)
    assert proc.returncode == code, proc.stderr
    assert sorted(p.name for p in out.parent.iterdir()) == (["trace.sqlite"] if written else [])
