"""Errors a user can act on.

Every error caused by input (a file, a machine name, an option) is an
``InputError``: the CLI prints its one-line message and exits with code 2, with
no traceback. Anything else is a bug in nodecast and keeps its traceback.
"""

from __future__ import annotations

from os import PathLike


class NodecastError(Exception):
    """Root of nodecast's exceptions."""


class InputError(NodecastError, ValueError):
    """Bad user input: names the file (or option), the key and the reason.

    The message reads ``<where>: <key>: <reason>. <what to do>`` with the parts
    that do not apply left out, so that it fits on one line.
    """

    def __init__(
        self,
        reason: str,
        *,
        path: str | PathLike[str] | None = None,
        key: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.reason = reason
        self.path = None if path is None else str(path)
        self.key = key
        self.hint = hint
        super().__init__(self.message)

    def __reduce__(self):
        # Keeps path, key and hint when the error crosses a process boundary (a Dask worker's simulation).
        return (_rebuild_input_error, (type(self), self.reason, self.path, self.key, self.hint))

    @property
    def message(self) -> str:
        # Path, key and the names a reason quotes come from input: shown as text (escape characters and bytes that
        # are not UTF-8 made visible) and cut, the path and key to a name's length, the reason and the hint to 1,000
        # characters, so that the message stays one readable line whatever a file held (a 1 MB name).
        from nodecast.text import LIMIT, shown

        def sentence(words: str) -> str:  # a line break in nodecast's own words reads as a space
            return shown(" ".join(words.split("\n")), 1000)

        parts = [shown(p, LIMIT) for p in (self.path, self.key) if p]
        text = ": ".join([*parts, sentence(self.reason)])
        return f"{text}. {sentence(self.hint)}" if self.hint else text


class GPUUnavailableError(InputError):
    """A command needs a CUDA device or driver and none is present."""


def _rebuild_input_error(cls: type[InputError], reason: str, path: str | None, key: str | None, hint: str | None) -> InputError:
    return cls(reason, path=path, key=key, hint=hint)
