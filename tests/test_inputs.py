"""Opening the user's input files: devices refused, sizes and inflation bounded, FIFOs waited on, pipes kept whole."""

from __future__ import annotations

import contextlib
import gzip
import importlib.resources
import os
import re
import resource
import socket
import stat
import subprocess
import sys
import threading
import time
import tracemalloc
import zlib
from pathlib import Path

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.inputs import (
    CONFIG_LIMIT_BYTES,
    DEFAULT_FIFO_WAIT_S,
    DEFAULT_LIMIT_BYTES,
    FIFO_WAIT_ENV,
    LIMIT_ENV,
    fifo_wait_s,
    inflate_gzip,
    input_limit_bytes,
    input_path,
    read_input,
    remove_spools,
)
from nodecast.machines.loader import load_machine_file
from nodecast.graph.taskgraph import load_dag
from nodecast.traces.load import load_trace, sample_file

SAMPLE = "nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"


def _nodecast(argv: list[str], *, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run the CLI in a child whose address space is capped at 3 GiB: a reader that reads until memory runs out fails
    there (MemoryError) instead of taking the machine's memory."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    return subprocess.run([sys.executable, "-m", "nodecast.cli", *argv], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=cap, env={**os.environ, **(env or {})}, check=False)


def _one_line_exit_2(proc: subprocess.CompletedProcess) -> str:
    err = proc.stderr
    assert proc.returncode == 2, err[-2000:]
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("nodecast: error:"), err
    return last


def _feed(path: Path | bytes, write_end: int) -> threading.Thread:
    """A thread writing a file (or bytes) into a pipe's write end, then closing it; a reader that gives up early
    ends it with EPIPE rather than leaving it blocked."""
    data = path if isinstance(path, bytes) else Path(path).read_bytes()

    def run() -> None:
        try:
            with os.fdopen(write_end, "wb") as f:
                f.write(data)
        except BrokenPipeError:
            pass

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


# -- special files ------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["project", f"sample:{SAMPLE}", "--from", "titan", "--to", "/dev/zero"],
    ["simulate", "--dag", "/dev/zero", "--machine", "h100-sxm5-server"],
    ["project", f"sample:{SAMPLE}", "--from", "titan", "--to", "summit", "--metrics", "/dev/zero"],
], ids=["machine", "dag", "metrics"])
def test_dev_zero_is_refused_at_once(argv):
    """/dev/zero as a machine file, DAG or metrics file is one line and exit 2 within seconds (it was read until
    memory ran out)."""
    start = time.monotonic()
    proc = _nodecast(argv)
    line = _one_line_exit_2(proc)
    assert time.monotonic() - start < 30
    assert proc.stderr.count("\n") == 1 and "/dev/zero: a character device, not a file" in line


def test_special_files_are_refused_and_folders_left_to_the_reader(tmp_path):
    """A socket and a character device are InputErrors naming what they are; a folder or a missing path is left to
    the reader's own message (it is no special file to refuse)."""
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "s"))
        with pytest.raises(InputError, match="a socket, not a file"):
            read_input(tmp_path / "s", what="machine file")
    finally:
        sock.close()
    with pytest.raises(InputError, match="/dev/null: a character device, not a file"):
        input_path("/dev/null")
    assert input_path(tmp_path) == tmp_path
    assert input_path(tmp_path / "missing") == tmp_path / "missing"
    with pytest.raises(FileNotFoundError):
        read_input(tmp_path / "missing")


# -- size limits --------------------------------------------------------------------------------

def test_limits_default_and_environment(monkeypatch):
    """The input limit is 1 GiB unless NODECAST_INPUT_LIMIT says otherwise (bytes, or KiB/MiB/GiB and kB/MB/GB);
    the FIFO wait is 30 s unless NODECAST_FIFO_WAIT says otherwise; nonsense in either is a one-line error."""
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    monkeypatch.delenv(FIFO_WAIT_ENV, raising=False)
    assert input_limit_bytes() == DEFAULT_LIMIT_BYTES == 1 << 30
    assert fifo_wait_s() == DEFAULT_FIFO_WAIT_S == 30.0
    for text, expected in [("4GiB", 4 << 30), ("512 MiB", 512 << 20), ("1000", 1000), ("2GB", 2_000_000_000),
                           ("1.5KiB", 1536)]:
        monkeypatch.setenv(LIMIT_ENV, text)
        assert input_limit_bytes() == expected, text
    for bad in ["lots", "-1", "0", "1 parsec"]:
        monkeypatch.setenv(LIMIT_ENV, bad)
        with pytest.raises(InputError, match=LIMIT_ENV):
            input_limit_bytes()
    monkeypatch.setenv(FIFO_WAIT_ENV, "0.25")
    assert fifo_wait_s() == 0.25
    monkeypatch.setenv(FIFO_WAIT_ENV, "soon")
    with pytest.raises(InputError, match=FIFO_WAIT_ENV):
        fifo_wait_s()


def test_text_file_over_the_limit_is_refused(tmp_path, monkeypatch):
    """A DAG file larger than the input limit is refused with the limit and how to raise it (it was parsed whole:
    here a valid DAG padded past a 1 KiB limit)."""
    dag = tmp_path / "dag.json"
    dag.write_text('{"tasks": [{"name": "a", "kernel": "k", "flops": 1}]}' + " " * 4096, encoding="utf-8")
    monkeypatch.setenv(LIMIT_ENV, "1KiB")
    with pytest.raises(InputError, match=r"dag\.json: is larger than the 1 KiB .*NODECAST_INPUT_LIMIT"):
        load_dag(dag)


def test_machine_file_through_a_pipe_is_capped(tmp_path):
    """A machine file is at most 16 MiB, also through a pipe (`--to <(yes '#')` would be read forever)."""
    read_end, write_end = os.pipe()
    feeder = _feed(b"#\n" * (CONFIG_LIMIT_BYTES // 2 + 1024), write_end)
    try:
        with pytest.raises(InputError, match="more than 16 MiB came through the pipe"):
            load_machine_file(f"/dev/fd/{read_end}")
    finally:
        os.close(read_end)
        feeder.join(10)


# -- gzip ---------------------------------------------------------------------------------------

def _bomb(path: Path, inflated: int) -> Path:
    """A gzip file of ``inflated`` zero bytes, written a MiB at a time (the test never holds them all)."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    with path.open("wb") as f:
        for _ in range(inflated >> 20):
            f.write(comp.compress(zeros))
        f.write(comp.flush())
    return path


def test_gzip_bomb_is_refused_with_bounded_memory(tmp_path, monkeypatch):
    """A small gzip that expands beyond the limit is refused once the limit is passed, never inflated whole: 64 MiB
    of zeros under a 1 MiB limit peaks at a few MiB (it was inflated whole, then refused as invalid JSON)."""
    bomb = _bomb(tmp_path / "bomb.json.gz", 64 << 20)
    monkeypatch.setenv(LIMIT_ENV, "1MiB")
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match=r"bomb\.json\.gz: the gzip stream expands beyond 1 MiB"):
            load_trace(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"peak {peak / 2**20:.1f} MiB"


def test_inflate_keeps_members_and_errors():
    """Several gzip members are inflated one after the other as gzip.decompress does; a truncated stream is still
    the EOFError the readers turn into their own message."""
    data = gzip.compress(b'{"a": ') + gzip.compress(b"1}")
    assert bytes(inflate_gzip(data, "x.json.gz", limit=1 << 20)) == b'{"a": 1}'
    with pytest.raises(EOFError):
        inflate_gzip(gzip.compress(b"x" * 1000)[:-12], "x.json.gz", limit=1 << 20)
    with pytest.raises(InputError, match="expands beyond 10 bytes"):
        inflate_gzip(gzip.compress(b"x" * 11), "x.json.gz", limit=10)


# -- FIFOs --------------------------------------------------------------------------------------

def test_fifo_without_writer_is_refused_after_the_wait(tmp_path):
    """`nodecast inspect FIFO` with no program writing to it says it waits, then gives up with one line and exit 2
    when the wait (NODECAST_FIFO_WAIT, shortened here) is over; it blocked forever."""
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    start = time.monotonic()
    proc = _nodecast(["inspect", str(fifo)], env={FIFO_WAIT_ENV: "0.5"}, timeout=20)
    line = _one_line_exit_2(proc)
    assert time.monotonic() - start < 15
    assert "waiting up to 0.5 s" in proc.stderr
    assert str(fifo) in line and "no program opened this FIFO for writing within 0.5 s" in line


def test_fifo_waits_for_a_late_writer(tmp_path, monkeypatch):
    """A FIFO whose writer comes during the wait is read whole; a writer that comes and closes without writing gives
    an empty input at once, not a wait for another writer."""
    monkeypatch.setenv(FIFO_WAIT_ENV, "20")
    fifo = tmp_path / "m.fifo"
    os.mkfifo(fifo)

    def late(data: bytes) -> None:
        time.sleep(0.3)
        with open(fifo, "wb") as f:
            f.write(data)

    writer = threading.Thread(target=late, args=(b"schema_version = 1\n",), daemon=True)
    writer.start()
    assert read_input(fifo, what="machine file") == b"schema_version = 1\n"
    writer.join(10)
    empty = tmp_path / "empty.fifo"
    os.mkfifo(empty)
    writer = threading.Thread(target=lambda: open(empty, "wb").close(), daemon=True)
    start = time.monotonic()
    writer.start()
    assert read_input(empty) == b""
    assert time.monotonic() - start < 5
    writer.join(10)


# -- pipes --------------------------------------------------------------------------------------

def _same_trace(a, b) -> None:
    assert len(a) == len(b) and len(a) > 0
    assert a.columns.keys() == b.columns.keys() and list(a.names) == list(b.names)
    for name, col in a.columns.items():
        assert np.array_equal(col, b[name], equal_nan=col.dtype.kind == "f"), name
    assert a.meta.gpus == b.meta.gpus and a.meta.format == b.meta.format


@pytest.mark.parametrize("name", ["kineto_alexnet-benchmark_a100.json.gz", "nvprof-gputrace-csv_vectoradd_k40c.csv",
                                  "nsys_openacc-kmeans_rtx3080.sqlite", "sample"])
def test_trace_through_a_pipe_reads_as_the_file(name, request):
    """A trace given as a pipe (/dev/fd/N, as bash's `<(zcat x.json.gz)` gives it) reads as the file does, GPU ops
    and host records both (they open it twice), and is named by the pipe's path; it was refused because format
    detection had consumed its start."""
    from nodecast.workflows.forecast import read_trace_and_api

    if name == "sample":
        stack = contextlib.ExitStack()
        request.addfinalizer(stack.close)
        file = stack.enter_context(importlib.resources.as_file(sample_file(SAMPLE)))
    else:
        file = request.getfixturevalue("shared_traces") / name
    want_trace, want_api = read_trace_and_api(file)
    read_end, write_end = os.pipe()
    feeder = _feed(file, write_end)
    pipe = f"/dev/fd/{read_end}"
    try:
        trace, api = read_trace_and_api(pipe)
    finally:
        os.close(read_end)
        feeder.join(10)
    _same_trace(trace, want_trace)
    assert trace.meta.source == pipe and api.meta.source == pipe
    assert len(api) == len(want_api) and api.columns.keys() == want_api.columns.keys()
    for col, values in api.columns.items():
        assert np.array_equal(values, want_api[col]), col


def test_process_substitution_on_the_command_line(shared_traces, tmp_path, capsys):
    """`nodecast inspect <(zcat x.json.gz)`, the issue's own command, prints what the unpacked file gives."""
    from nodecast.cli import main

    gz = shared_traces / "kineto_alexnet-benchmark_a100.json.gz"
    plain = tmp_path / "t.json"
    plain.write_bytes(gzip.decompress(gz.read_bytes()))
    cmd = f'"{sys.executable}" -m nodecast.cli inspect <(zcat "{gz}") --json'
    piped = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120, check=False)
    assert piped.returncode == 0, piped.stderr[-2000:]
    assert main(["inspect", str(plain), "--json"]) == 0
    direct = capsys.readouterr().out
    assert "/dev/fd/" in piped.stdout
    assert re.sub(r"/dev/fd/\d+", "X", piped.stdout) == direct.replace(str(plain), "X")


def test_pipe_over_the_limit_is_refused_and_spools_are_removed(monkeypatch):
    """Bytes beyond the input limit through a pipe are refused; a pipe read whole is copied once (a second read gets
    the same bytes) into a temporary file that remove_spools deletes."""
    monkeypatch.setenv(LIMIT_ENV, "1KiB")
    read_end, write_end = os.pipe()
    feeder = _feed(b"x" * 4096, write_end)
    try:
        with pytest.raises(InputError, match="more than 1 KiB came through the pipe"):
            read_input(f"/dev/fd/{read_end}")
    finally:
        os.close(read_end)
        feeder.join(10)
    read_end, write_end = os.pipe()
    feeder = _feed(b"hello", write_end)
    try:
        copy = input_path(f"/dev/fd/{read_end}")
        assert stat.S_ISREG(copy.stat().st_mode) and copy.read_bytes() == b"hello"
        assert read_input(f"/dev/fd/{read_end}") == b"hello"
    finally:
        os.close(read_end)
        feeder.join(10)
    remove_spools()
    assert not copy.exists() and not copy.parent.exists()


def test_regular_files_are_read_as_given_unless_a_limit_is_set(tmp_path, monkeypatch):
    """A regular file's size is there to see: no default cap (a large real trace reads); NODECAST_INPUT_LIMIT caps it."""
    from nodecast.inputs import read_input

    f = tmp_path / "big.csv"
    f.write_bytes(b"x" * 4096)
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    assert len(read_input(f, limit=None)) == 4096
    monkeypatch.setenv(LIMIT_ENV, "1KiB")
    with pytest.raises(InputError, match="larger than the 1 KiB"):
        read_input(f)


def test_gzip_default_cap_grows_with_the_compressed_size(monkeypatch):
    """Without NODECAST_INPUT_LIMIT a gzip may inflate to max(1 GiB, GZIP_MAX_RATIO x its size): a bomb's ratio
    (thousands) is refused, a trace's (10-30) is not."""
    import gzip as gz

    from nodecast import inputs

    monkeypatch.delenv(LIMIT_ENV, raising=False)
    monkeypatch.setattr(inputs, "DEFAULT_LIMIT_BYTES", 1 << 16)  # so that the ratio rule decides, in a small test
    bomb = gz.compress(b"\0" * (4 << 20))  # ~4 KiB that inflate to 4 MiB: ratio ~1000
    with pytest.raises(InputError, match="expands beyond"):
        inputs.inflate_gzip(bomb, "bomb.json.gz")
    text = np.random.default_rng(0).integers(0, 256, 512 << 10, dtype=np.uint8).tobytes()  # does not compress
    assert len(inputs.inflate_gzip(gz.compress(text), "t.json.gz")) == len(text)
