"""Looking at a path the user gave, with the operating system's refusals as one-line InputErrors.

``Path.exists``, ``is_file`` and ``is_dir`` answer False only for a missing
file (ENOENT, ENOTDIR, ELOOP, EBADF); every other refusal of ``stat`` escapes
as an OSError traceback: a file or folder name over the file system's 255
bytes (ENAMETOOLONG), a folder that may not be searched (EACCES), an I/O
error. A NUL byte in a name (from a TOML file, say) is a ValueError.

Two kinds of probe:

* ``probe``, ``is_file``, ``is_dir``, ``exists``: for a path that must be a
  file or folder (an input, an output): those refusals are InputErrors naming
  the path and the option.
* ``names_a_file``, ``stat_quietly``: for text that may be a file or a name (``--to dgx-a100``
  or ``--to node.toml``; a catalogue lookup ``catalogue/NAME.toml``): a name
  the system cannot look up names no file, so it is False and the text is read
  as a name, which then fails as an unknown name.

And ``as_text``: a file name that is not UTF-8 as text every writer can
encode (its odd bytes as ``\\xff``).
"""

from __future__ import annotations

import errno
import os
import re
import stat

from nodecast.errors import InputError

#: stat errors that mean "nothing is there" (as ``pathlib`` reads them).
_MISSING = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EBADF)


def probe(path: str | os.PathLike[str], option: str | None = None) -> os.stat_result | None:
    """``os.stat(path)`` (links followed), None when nothing is there; InputError naming ``path`` and
    ``option`` when the system refuses to look (a name too long, no permission, an I/O error)."""
    try:
        return os.stat(path)
    except ValueError:  # a NUL byte: no file can have that name
        raise InputError("the name holds a NUL byte", path=os.fsdecode(path).replace("\0", "\\0"), key=option,
                         hint="Give a file name without one") from None
    except OSError as exc:
        if exc.errno in _MISSING:
            return None
        raise InputError(_reason(exc), path=path, key=option, hint=_hint(exc)) from None


def exists(path: str | os.PathLike[str], option: str | None = None) -> bool:
    """Whether anything is at ``path`` (``probe``'s InputErrors)."""
    return probe(path, option) is not None


def is_file(path: str | os.PathLike[str], option: str | None = None) -> bool:
    """Whether ``path`` is a regular file, links followed (``probe``'s InputErrors)."""
    st = probe(path, option)
    return st is not None and stat.S_ISREG(st.st_mode)


def is_dir(path: str | os.PathLike[str], option: str | None = None) -> bool:
    """Whether ``path`` is a folder, links followed (``probe``'s InputErrors)."""
    st = probe(path, option)
    return st is not None and stat.S_ISDIR(st.st_mode)


def stat_quietly(path: str | os.PathLike[str]) -> os.stat_result | None:
    """``os.stat(path)`` (links followed), None for anything the system cannot look up (see the module
    docstring: the text is then a name, not a file)."""
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def names_a_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a regular file (links followed); False where ``stat_quietly`` finds nothing."""
    st = stat_quietly(path)
    return st is not None and stat.S_ISREG(st.st_mode)


#: A lone surrogate: how ``os.fsdecode`` (surrogateescape) keeps a byte of a file name that is not UTF-8.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def as_text(text: str) -> str:
    """``text`` (a file name, or a page or table holding one) with every lone surrogate written as the byte it
    stands for, ``\\xff`` (another one as ``\\udxxx``), the way the terminal shows it (``nodecast.text``).

    A file name that is not UTF-8 (``b"tr\\xffce.nvvp"``) reaches Python as a str
    holding U+DCFF, which no UTF-8 encoder (a page's write, pandas' Arrow
    strings) takes: a writer passes its names or its text through here.
    """
    if not _LONE_SURROGATE.search(text):
        return text
    return _LONE_SURROGATE.sub(_byte_escape, text)


def _byte_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENAMETOOLONG:
        return "the path is too long for the file system (a file or folder name over 255 bytes)"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "cannot be looked at (permission denied on a folder of the path)"
    return f"cannot be looked at ({exc.strerror or exc})"


def _hint(exc: OSError) -> str:
    if exc.errno == errno.ENAMETOOLONG:
        return "Use shorter file and folder names"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "Check the folder's permissions or choose another path"
    return "Check the path and the file system"
