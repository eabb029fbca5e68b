"""A result's notes at the terminal: the decisive ones under the headline table, the others after the tables.

``--notes`` (``NOTES``) chooses what is printed: ``decisive`` (the default)
prints the decisive notes (``nodecast.notes``: more than 3 % of the answer
rests on them) and, on the last line, how many others there are; ``all``
prints the others too, after the tables; ``none`` prints no note. Every note
is also in ``--json`` (with its severity) and on the ``--html`` page.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console

from nodecast.notes import split
from nodecast.report import tables as t
from nodecast.words import plural

#: ``--notes`` choices; the first is the default.
NOTES = ("decisive", "all", "none")
DEFAULT = NOTES[0]
#: The help of ``--notes``.
HELP = ("notes printed: decisive (default: those more than 3 %% of the answer rests on, under the first table, and "
        "a count of the others), all (the others too, after the tables) or none; --json and --html hold them all")


def head(console: Console, notes: Iterable[str], which: str = DEFAULT, label: str = "") -> list[str]:
    """Print the decisive notes of ``notes`` (largest share first; none with ``which="none"``), each as
    ``note: TEXT`` (``note (LABEL): TEXT``); return the others, for ``tail``."""
    decisive, rest = split(notes)
    if which != "none":
        for note in decisive:
            console.print(t.plain(f"note{f' ({label})' if label else ''}: {note}", style="bold"), soft_wrap=True)
    return rest


def tail(console: Console, rest: list[str], which: str = DEFAULT, label: str = "") -> None:
    """After the tables: every other note (``which="all"``), or how many there are (``"decisive"``)."""
    if which == "all":
        for note in rest:
            console.print(t.plain(f"note{f' ({label})' if label else ''}: {note}"), soft_wrap=True)
    elif which == "decisive" and rest:
        console.print(t.plain(f"{plural(len(rest), 'more note')}: --notes all prints them"), soft_wrap=True)
