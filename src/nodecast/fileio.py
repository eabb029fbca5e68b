"""Output files that are never left half-written.

Writers produce a temporary file next to the target and rename it into place
only when the write succeeded, so a crash or a user error leaves the previous
file (or nothing) behind.

A run that is stopped (Ctrl-C, SIGTERM, SIGHUP: ``nodecast._signals``)
removes its temporary file on the way out, and the command line removes the
outputs the run had already finished (``output_run``, ``discard_finished``).
SIGKILL cannot be caught, so its temporary file stays: temporary names carry
the writer's process id and host (``.NAME.<pid>-<host>.XXXXXXXX.part``), and
the next write into that folder removes those of writers on this host that
are no longer running (``_remove_stale``). A temporary file in a folder that
nodecast never writes to again stays until removed by hand.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import socket
import stat
import tempfile
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from nodecast import _signals
from nodecast.errors import InputError
from nodecast.paths import probe


def _umask() -> int:
    """The process's umask (read by setting it and putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_writable(path: str | os.PathLike[str], option: str | None = None) -> Path:
    """``path`` as a Path if an output can be written there; else InputError.

    Checks, before any work is done: the folder exists and is a folder, the
    path is not itself a folder, and both can be written. Commands call it on
    every output they will write before writing the first, so that a bad
    second path does not leave the first output behind.
    """
    out = Path(path)
    folder = out.parent if str(out.parent) else Path(".")
    probe(out, option)  # a name too long or a folder that may not be searched: one line, not an OSError
    if out.is_dir():
        raise InputError("is a folder", path=out, key=option, hint="Give a file name")
    if not folder.is_dir():
        if folder.exists():
            raise InputError("is a file, not a folder", path=folder, key=option, hint="Choose an output path inside a folder")
        raise InputError("folder does not exist", path=folder, key=option, hint="Create it or choose another output path")
    if not os.access(folder, os.W_OK | os.X_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise InputError("cannot write here (permission denied)", path=out, key=option, hint="Choose a writable output path")
    return out


#: Prefix of the trace names that are package data (``sample:NAME``): never a user's file, never written.
_SAMPLE_PREFIX = "sample:"


def _identity(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """(device, inode) of the file ``path`` names, links followed; None when it cannot be looked at (missing, a
    name too long, a NUL byte, no permission): then there is no existing file for an output to replace."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _resolved(path: str | os.PathLike[str]) -> str:
    """The absolute path with symbolic links followed as far as they exist (how two spellings of a file that does
    not exist yet are compared)."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return os.path.abspath(path)


def check_outputs(outputs: Mapping[str, str | os.PathLike[str] | None],
                  inputs: Iterable[str | os.PathLike[str] | None] = ()) -> None:
    """InputError, before any work, when an output is one of the ``inputs`` or two outputs are one file.

    ``outputs`` maps each output option (``-o``) to its path, None where the
    option is not given; ``inputs`` are the files the command reads (None and
    ``sample:NAME`` skipped; a folder is harmless: pass the files read in it).
    Why: every output replaces its target whole (``atomic_path``), after the
    inputs were read, so an output on an input's path loses the input with
    exit 0, and the second of two outputs on one path silently replaces the
    first. Files are compared by identity (device and inode, links
    followed), not by spelling: ``./t.csv``, ``t.csv``, its absolute path,
    a symbolic or hard link to it are one file. Outputs that do not exist yet
    are compared by their resolved paths.
    """
    read: dict[tuple[int, int], str] = {}
    for path in inputs:
        if path is None or os.fspath(path).startswith(_SAMPLE_PREFIX):
            continue
        ident = _identity(path)
        if ident is not None:
            read.setdefault(ident, os.fspath(path))
    seen: dict[object, str] = {}
    for option, path in outputs.items():
        if path is None:
            continue
        ident = _identity(path)
        if ident is not None and ident in read:
            raise InputError(f"is the same file as the input {read[ident]}, which writing it would replace",
                             path=path, key=option, hint="Choose another output path")
        key: object = ident if ident is not None else _resolved(path)
        if key in seen:
            raise InputError("name the same file: the second output would replace the first", path=path,
                             key=f"{seen[key]} and {option}", hint="Give each output its own path")
        seen[key] = option


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it onto ``target`` on success.

    Raises InputError when ``check_writable`` refuses the target.
    """
    target = check_writable(target)
    folder = target.parent if str(target.parent) else Path(".")
    _remove_stale(folder)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.{_owner()}.", suffix=".part", dir=folder)
    except OSError as exc:
        raise InputError(
            f"cannot write here ({exc.strerror})", path=target, hint="Choose a writable output path"
        ) from None
    tmp = Path(tmp_name)
    try:  # from the moment the file exists: a stop signal anywhere below still removes it
        os.close(fd)
        # mkstemp creates the file 0600; the output should get the mode any other
        # new file gets (the umask), or keep the mode of the file it replaces.
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except OSError:
            mode = 0o666 & ~_umask()
        with contextlib.suppress(OSError):
            os.chmod(tmp, mode)
        yield tmp
        _signals.check()  # a stop whose exception the writer swallowed: do not finish this output
        if _finished is not None:
            # Noted before the rename by the file's identity: discard_finished removes the target only if it is
            # this file, whichever side of the rename a stop lands on.
            st = tmp.stat()
            _finished.append((target, st.st_dev, st.st_ino))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


#: Outputs renamed into place inside output_run, as (path, device, inode); None outside one.
_finished: list[tuple[Path, int, int]] | None = None


@contextlib.contextmanager
def output_run() -> Iterator[None]:
    """Note every output ``atomic_path`` finishes inside the block (one command's run) for ``discard_finished``."""
    global _finished  # noqa: PLW0603 (one run at a time per process, as the signals that stop it)
    outer, _finished = _finished, []
    try:
        yield
    finally:
        _finished = outer


def discard_finished() -> list[Path]:
    """Remove the outputs finished inside the current ``output_run``; the paths removed, in the order written.

    Why: a run that is stopped must not leave outputs that look like the
    result of a complete run (a JSON without its HTML page, one of a sweep's
    files). An output that replaced an existing file takes that file with it
    (its content was already gone). A path is removed only while it is still
    the file this run put there: one that something else has put there since stays.
    """
    removed = []
    for path, dev, ino in _finished or ():
        try:
            st = path.stat(follow_symlinks=False)
            if (st.st_dev, st.st_ino) == (dev, ino):
                path.unlink()
                removed.append(path)
        except OSError:
            continue
    if _finished is not None:
        _finished.clear()
    return removed


@functools.cache
def _host_id() -> str:
    """8 hex digits naming this host (a CRC of its name): temporary names of other hosts sharing a folder differ."""
    return f"{zlib.crc32(socket.gethostname().encode('utf-8', 'surrogateescape')):08x}"


def _owner() -> str:
    """``<pid>-<host>``, the part of a temporary name that says which process writes it."""
    return f"{os.getpid()}-{_host_id()}"


#: A temporary name of atomic_path: ``.NAME.<pid>-<host>.XXXXXXXX.part`` (mkstemp's 8 random characters).
_TEMPORARY = re.compile(r"\..+\.(?P<pid>[0-9]+)-(?P<host>[0-9a-f]{8})\.[a-z0-9_]{8}\.part")


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (one of another user counts: it may not be signalled)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # not ours to signal (EPERM) or not a pid: assume it runs
        return True
    return True


def _remove_stale(folder: Path) -> None:
    """Remove the temporary files that writers on this host left in ``folder`` when they were killed (SIGKILL,
    a crash of the interpreter, a power cut): those whose process no longer runs. Another host's files are left:
    its process ids mean nothing here (nor do those of a container that shares the folder and the host name but
    not the process ids, the one case this cannot tell apart). Errors are ignored: a file that stays is clutter."""
    try:
        with os.scandir(folder) as entries:
            names = [e.name for e in entries if e.name.startswith(".") and e.name.endswith(".part")]
    except OSError:
        return
    host = _host_id()
    for name in names:
        m = _TEMPORARY.fullmatch(name)
        if m and m["host"] == host and not _running(int(m["pid"])):
            with contextlib.suppress(OSError):
                os.unlink(folder / name)


def check_suffix(path: str | os.PathLike[str], suffixes: tuple[str, ...], what: str) -> Path:
    """``path`` if its extension is one of ``suffixes``; else InputError naming them."""
    path = Path(path)
    if path.suffix.lower() not in suffixes:
        raise InputError(
            f"cannot write {what} as {path.suffix or 'a file without extension'}",
            path=path,
            hint=f"Use one of {', '.join(suffixes)}",
        )
    return path


def write_text_atomic(target: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``target`` through a temporary file."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
