"""Opening the user's input files: bounded, never blocking forever, pipes read once and kept.

Every reader of a file the user names (traces, machine files, GPU data sheets
and hosts, DAG files, Nsight Compute CSVs, StarPU files) opens it through
here, so that hostile or careless input gets one line and exit 2 instead of
an endless read:

* Only regular files and pipes (a FIFO, ``<(zcat trace.json.gz)``,
  ``/dev/stdin``) are read. A character or block device (``/dev/zero``, a
  terminal, a disk) or a socket is refused: ``/dev/zero`` would be read until
  memory ran out. Folders and missing paths are left to each reader, whose
  own message names what it expected.
* What is read whole into memory is bounded where its size is not known
  before reading: a pipe gives at most ``NODECAST_INPUT_LIMIT`` bytes
  (default 1 GiB; ``4GiB``, ``512MiB``, ``2GB`` or plain bytes), and a gzip
  at most the larger of that and ``GZIP_MAX_RATIO`` times its compressed size
  once inflated (a 2 MB gzip can expand to 2 GiB; it is inflated piece by
  piece and refused as soon as it passes the limit, while a real 200 MB
  Kineto trace, compressed 10-30 times, still reads). A regular file's size
  is known and it is read whole as the user gave it, unless
  ``NODECAST_INPUT_LIMIT`` is set. Machine files, GPU data sheets and host
  files are at most ``CONFIG_LIMIT_BYTES`` (16 MiB; real ones are a few
  kilobytes). SQLite, Parquet and Arrow files are not read whole.
* A pipe is read once into a temporary file, which every later reader of that
  pipe in the run opens: format detection reads the start of a trace and the
  reader reads it again, forecasts read a trace and its host records
  separately, and SQLite needs a real file. The copies are removed when the
  process exits (``remove_spools``).
* A FIFO that no program has opened for writing is waited on for
  ``NODECAST_FIFO_WAIT`` seconds (default 30), saying so on standard error,
  then refused: a plain open would block forever. A writer that has opened
  the FIFO is waited on as long as it takes, as ``cat`` would.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import gzip
import io
import os
import re
import select
import shutil
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from nodecast.errors import InputError

#: Environment variable: the most bytes read whole from one input (see the module docstring).
LIMIT_ENV = "NODECAST_INPUT_LIMIT"
#: 1 GiB: Python's JSON and CSV parsers take several times the text's size in memory.
DEFAULT_LIMIT_BYTES = 1 << 30
#: A gzip may inflate to this many times its compressed size beyond the default limit: JSON traces compress 10-30
#: times; a gzip bomb, hundreds to a thousand times.
GZIP_MAX_RATIO = 64
#: Machine files, GPU data sheets and host files (TOML) are a few kilobytes; anything this large is no such file.
CONFIG_LIMIT_BYTES = 16 << 20
#: Environment variable: seconds to wait for a program to open a FIFO for writing.
FIFO_WAIT_ENV = "NODECAST_FIFO_WAIT"
DEFAULT_FIFO_WAIT_S = 30.0

_CHUNK = 1 << 20  # bytes per read from a pipe and per inflated piece
_POLL_S = 0.05  # how often a FIFO without a writer is looked at again, seconds

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30,
          "t": 1 << 40, "tib": 1 << 40, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*", re.IGNORECASE)


def input_limit_bytes() -> int:
    """The most bytes nodecast reads whole from one input: ``$NODECAST_INPUT_LIMIT``, else 1 GiB.

    The variable holds bytes, or a number with KiB/MiB/GiB/TiB (K/M/G/T
    alike, powers of 1024) or kB/MB/GB/TB (powers of 1000); anything else is
    an InputError.
    """
    text = os.environ.get(LIMIT_ENV, "").strip()
    if not text:
        return DEFAULT_LIMIT_BYTES
    match = _SIZE.fullmatch(text)
    unit = _UNITS.get(match.group(2).lower()) if match else None
    value = int(float(match.group(1)) * unit) if match and unit else 0
    if value < 1:
        raise InputError(f"{text!r} is not a size in bytes", key=LIMIT_ENV,
                         hint="Give bytes, or a number with KiB, MiB or GiB (e.g. 4GiB)")
    return value


def _set_limit_bytes() -> int | None:
    """``$NODECAST_INPUT_LIMIT`` when the user set it, else None."""
    return input_limit_bytes() if os.environ.get(LIMIT_ENV, "").strip() else None


def fifo_wait_s() -> float:
    """Seconds to wait for a writer on a FIFO: ``$NODECAST_FIFO_WAIT``, else 30 s."""
    text = os.environ.get(FIFO_WAIT_ENV, "").strip()
    if not text:
        return DEFAULT_FIFO_WAIT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise InputError(f"{text!r} is not a number of seconds", key=FIFO_WAIT_ENV, hint="Give e.g. 30 or 0.5")
    return value


def size_text(n: int) -> str:
    """``n`` bytes as a short text: "1 GiB", "16 MiB", "1.5 KiB", "10 bytes"."""
    for unit, name in ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= unit:
            return f"{n / unit:.4g} {name}"
    return f"{n} bytes"


def _limit_hint(limit: int | None, what: str) -> str:
    if limit is None:
        return f"Set {LIMIT_ENV} to read more (e.g. {LIMIT_ENV}=4GiB), or check that this is the right file"
    return f"A {what} is far smaller; check that this is the right file"


def _special(path: str | os.PathLike[str], mode: int, key: str | None) -> InputError:
    kind = ("a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a special file")
    return InputError(f"{kind}, not a file", path=path, key=key,
                      hint="Give a regular file, or a pipe such as <(zcat trace.json.gz)")


# -- pipes -------------------------------------------------------------------------------------

@dataclass
class _Spool:
    fd: int  # the pipe, kept open: its inode (the cache key) cannot be reused while it is
    folder: Path
    file: Path
    pid: int


_SPOOLS: dict[tuple[int, int], _Spool] = {}
_LOCK = threading.Lock()


def remove_spools() -> None:
    """Delete the temporary copies of pipes read in this process (runs at exit; safe to call any time)."""
    with _LOCK:
        spools = list(_SPOOLS.values())
        _SPOOLS.clear()
    for spool in spools:
        if spool.pid != os.getpid():  # a forked child does not own its parent's copies
            continue
        with contextlib.suppress(OSError):
            os.close(spool.fd)
        shutil.rmtree(spool.folder, ignore_errors=True)


atexit.register(remove_spools)


def _wait_for_writer(fd: int, path: str | os.PathLike[str], key: str | None) -> bytes:
    """The first bytes of a FIFO opened non-blocking, once a program has opened it for writing (b"" when the
    writer has not written yet, or closed it empty); InputError after ``fifo_wait_s()`` without one.

    On a non-blocking FIFO, read() raises EAGAIN when a writer is there with nothing written yet, returns data
    when there is some, and returns b"" both when no writer came yet and when one came and left: POLLHUP tells
    these two apart.
    """
    wait = fifo_wait_s()
    deadline = time.monotonic() + wait
    said = False
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while True:
        try:
            first = os.read(fd, _CHUNK)
        except BlockingIOError:
            return b""  # a writer is there
        if first or any(ev & select.POLLHUP for _, ev in poller.poll(0)):
            return first
        left = deadline - time.monotonic()
        if left <= 0:
            raise InputError(f"no program opened this FIFO for writing within {wait:g} s", path=path, key=key,
                             hint=f"Start the program that writes to it first, or set {FIFO_WAIT_ENV} to wait longer")
        if not said:
            print(f"nodecast: waiting up to {wait:g} s for a program to write to {path} (a FIFO; {FIFO_WAIT_ENV} "
                  "sets how long)", file=sys.stderr, flush=True)
            said = True
        time.sleep(min(_POLL_S, left))


def _spool(path: str | os.PathLike[str], st: os.stat_result, cap: int, limit: int | None, key: str | None,
           what: str) -> Path:
    """The temporary file holding everything that came through the pipe ``path`` (read once per process)."""
    ident = (st.st_dev, st.st_ino)
    with _LOCK:
        done = _SPOOLS.get(ident)
        if done is not None:
            return done.file
        # O_NONBLOCK: a plain open of a FIFO blocks until some program opens it for writing.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        folder: Path | None = None
        try:
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):  # replaced between the stat and the open
                raise InputError("changed while being opened", path=path, key=key, hint="Run again")
            chunk = _wait_for_writer(fd, path, key)
            os.set_blocking(fd, True)
            try:
                folder = Path(tempfile.mkdtemp(prefix="nodecast-pipe-"))
                # The copy keeps the pipe's own name: messages quoting a file's name read the same.
                file = folder / (Path(path).name or "input")
                total = 0
                with file.open("wb") as out:
                    while True:
                        total += len(chunk)
                        if total > cap:
                            raise InputError(f"more than {size_text(cap)} came through the pipe", path=path,
                                             key=key, hint=_limit_hint(limit, what))
                        out.write(chunk)
                        chunk = os.read(fd, _CHUNK)
                        if not chunk:
                            break
            except OSError as exc:  # the temporary folder is full or not writable
                raise InputError(f"cannot copy the pipe to a temporary file ({exc.strerror or exc})", path=path,
                                 key=key, hint="Set TMPDIR to a folder with room, or give a regular file") from None
        except BaseException:
            os.close(fd)
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
            raise
        _SPOOLS[ident] = _Spool(fd, folder, file, os.getpid())
        return file


def input_path(path: str | os.PathLike[str], *, what: str = "file", limit: int | None = None,
               key: str | None = None) -> Path:
    """A path readers can open (and open again) for the input ``path``.

    A regular file, a folder or a missing path: ``path`` itself (the reader
    reports a folder or a missing file in its own words). A pipe or FIFO:
    a temporary copy of everything that came through it, at most ``limit``
    bytes (None: ``input_limit_bytes()``), the same copy for every call in
    this process. A device or socket: InputError.
    """
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # missing, unreadable, a name too long, a NUL byte: the reader says so
        return Path(path)
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return Path(path)
    if stat.S_ISFIFO(st.st_mode):
        cap = input_limit_bytes() if limit is None else limit
        return _spool(path, st, cap, limit, key, what)
    raise _special(path, st.st_mode, key)


def read_input(path: str | os.PathLike[str], *, what: str = "file", limit: int | None = None,
               key: str | None = None) -> bytes:
    """The whole content of the input ``path``, at most ``limit`` bytes (None: ``$NODECAST_INPUT_LIMIT`` if set,
    else no limit for a regular file; a pipe is bounded by ``input_path``).

    InputError for a device, a socket, a FIFO nobody writes to, or content
    over the limit (``what`` names the kind of file in the hint). OSError
    (missing file, folder, permission) is left to the caller, whose message
    says what it expected.
    """
    cap = limit if limit is not None else _set_limit_bytes()
    real = input_path(path, what=what, limit=limit, key=key)
    # O_NONBLOCK: never block on a FIFO put in place after the check (fstat below refuses it).
    fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(st.st_mode):
            raise _special(path, st.st_mode, key)
        if cap is None:  # a regular file, read as given: its size was there to see
            return f.read()
        if st.st_size <= cap:
            data = f.read(st.st_size + 1)
            if len(data) <= st.st_size:
                return data
            # Longer than its size said (a file still being written, a /proc file): read on, bounded.
            parts = [data]
            total = len(data)
            while total <= cap:
                chunk = f.read(_CHUNK)
                if not chunk:
                    return b"".join(parts)
                parts.append(chunk)
                total += len(chunk)
    raise InputError(f"is larger than the {size_text(cap)} nodecast reads from one {what}", path=path, key=key,
                     hint=_limit_hint(limit, what))


# -- gzip --------------------------------------------------------------------------------------

def inflate_gzip(raw: bytes, path: str | os.PathLike[str], *, limit: int | None = None) -> bytearray:
    """The inflated content of the gzip data ``raw`` (every member, as ``gzip.decompress``), at most ``limit`` bytes
    (None: ``$NODECAST_INPUT_LIMIT`` if set, else the larger of 1 GiB and ``GZIP_MAX_RATIO`` x ``len(raw)``).

    Inflated a piece at a time: a gzip bomb costs at most the limit in memory
    before the InputError "expands beyond N". A truncated or damaged stream
    raises EOFError, ``gzip.BadGzipFile`` (an OSError) or ``zlib.error``, as
    ``gzip.decompress`` would.
    """
    cap = limit if limit is not None else _set_limit_bytes() or max(DEFAULT_LIMIT_BYTES, GZIP_MAX_RATIO * len(raw))
    out = bytearray()
    with gzip.GzipFile(fileobj=io.BytesIO(raw)) as stream:
        while True:
            piece = stream.read(min(_CHUNK, cap + 1 - len(out)))
            if not piece:
                return out
            out += piece
            if len(out) > cap:
                raise InputError(f"the gzip stream expands beyond {size_text(cap)}", path=path,
                                 hint=_limit_hint(limit, "trace"))


# -- messages ----------------------------------------------------------------------------------

@contextlib.contextmanager
def named_as(shown: str | os.PathLike[str], real: str | os.PathLike[str]) -> Iterator[None]:
    """Errors raised while reading ``real`` (a pipe's temporary copy) name ``shown`` (the pipe) instead."""
    old, new = str(real), str(shown)
    if old == new:
        yield
        return
    try:
        yield
    except InputError as exc:
        def fix(text: str | None) -> str | None:
            return None if text is None else text.replace(old, new)

        try:
            renamed = type(exc)(fix(exc.reason) or "", path=fix(exc.path), key=fix(exc.key), hint=fix(exc.hint))
        except TypeError:  # a subclass built otherwise: keep the class's meaning, lose nothing of the message
            renamed = InputError(fix(exc.reason) or "", path=fix(exc.path), key=fix(exc.key), hint=fix(exc.hint))
        raise renamed from None
