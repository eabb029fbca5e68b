"""Reading the catalogue's TOML files (GPU data sheets, target files, hosts): one way to read a file and to find
one by key, with the same errors for each kind."""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nodecast.decoding import decoder_limits
from nodecast.errors import InputError
from nodecast.inputs import CONFIG_LIMIT_BYTES, read_input
from nodecast.paths import names_a_file


def read_toml(path: Path, what: str, hint: str, missing_hint: str | None = None) -> tuple[dict[str, Any], str]:
    """The parsed table and the text of the TOML file ``path`` (a ``what``: "GPU data sheet", "host file"...);
    InputError naming the file when it is missing (``missing_hint``, default ``hint``), unreadable, empty or not
    TOML."""
    try:
        text = read_input(path, what=what, limit=CONFIG_LIMIT_BYTES).decode("utf-8")  # bounded: nodecast.inputs
    except FileNotFoundError:
        raise InputError("no such file", path=path, hint=missing_hint or hint) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {what} ({exc})", path=path) from None
    if not text.strip():
        raise InputError("is empty", path=path, hint=hint)
    try:
        with decoder_limits(path, what, hint):
            return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=path, hint=hint) from None


def find_file(key_or_path: str | Path, folder: Path, keys: Callable[[], list[str]], what: str, key: str) -> Path | str:
    """The file ``key_or_path`` names: a path as given (``.toml`` or with a ``/``: returned as given), else
    ``folder/<key>.toml``; InputError ``unknown <what>`` with the closest keys (``keys()``) when there is none."""
    text = str(key_or_path)
    if text.endswith(".toml") or "/" in text:
        return text
    path = folder / f"{text}.toml"
    if not names_a_file(path):  # a key too long for a file name is unknown too
        known = keys()
        close = difflib.get_close_matches(text, known, n=4)
        hint = f"Did you mean {', '.join(close)}?" if close else f"Known: {', '.join(known) or 'none'}"
        raise InputError(f"unknown {what} {text!r}", key=key, hint=hint + " (nodecast machines list)")
    return path
