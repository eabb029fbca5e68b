"""Output files that are never left half-written.

Writers produce a temporary file next to the target and rename it into place
only when the write succeeded, so a crash or a user error leaves the previous
file (or nothing) behind.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from nodecast.errors import InputError


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
    if out.is_dir():
        raise InputError("is a folder", path=out, key=option, hint="Give a file name")
    if not folder.is_dir():
        if folder.exists():
            raise InputError("is a file, not a folder", path=folder, key=option, hint="Choose an output path inside a folder")
        raise InputError("folder does not exist", path=folder, key=option, hint="Create it or choose another output path")
    if not os.access(folder, os.W_OK | os.X_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise InputError("cannot write here (permission denied)", path=out, key=option, hint="Choose a writable output path")
    return out


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it onto ``target`` on success.

    Raises InputError when ``check_writable`` refuses the target.
    """
    target = check_writable(target)
    folder = target.parent if str(target.parent) else Path(".")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=folder)
    except OSError as exc:
        raise InputError(
            f"cannot write here ({exc.strerror})", path=target, hint="Choose a writable output path"
        ) from None
    os.close(fd)
    tmp = Path(tmp_name)
    # mkstemp creates the file 0600; the output should get the mode any other
    # new file gets (the umask), or keep the mode of the file it replaces.
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except OSError:
        mode = 0o666 & ~_umask()
    with contextlib.suppress(OSError):
        os.chmod(tmp, mode)
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


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
