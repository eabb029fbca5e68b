"""The limits of Python's JSON and TOML decoders, as one-line InputErrors.

Besides their syntax errors (``json.JSONDecodeError``,
``tomllib.TOMLDecodeError``, which each reader words itself), ``json`` and
``tomllib`` raise:

* ``ValueError`` for an integer of more than 4,300 digits: CPython's limit on
  converting text to ``int`` (``sys.get_int_max_str_digits``, against
  quadratic-time conversions);
* ``RecursionError`` for arrays or tables nested deeper than the interpreter's
  recursion limit (about 1,000 levels).

No machine file, data sheet, host file, trace or DAG comes near either, so
both mean a damaged or hostile file. Every reader wraps its decode in
``decoder_limits``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from nodecast.errors import InputError


@contextmanager
def decoder_limits(path: str | os.PathLike[str] | None, what: str, hint: str | None = None) -> Iterator[None]:
    """Turn the decoders' limits met inside the block into an InputError naming ``path``.

    ``what`` names the kind of file, without article ("machine file").
    Syntax errors and every other exception pass through unchanged, for the
    reader's own handler.
    """
    try:
        yield
    except RecursionError:
        raise InputError(f"arrays or tables nested too deeply: no {what} nests so deep", path=path,
                         hint=hint or "The file is damaged or was not written as one") from None
    except ValueError as exc:
        if "integer string conversion" not in str(exc):  # CPython's wording for the digit limit
            raise
        raise InputError(f"an integer of more than {sys.get_int_max_str_digits():,} digits: no {what} holds one",
                         path=path,
                         hint=hint or "The file is damaged or was not written as one") from None
