"""Notes: what a result assumed, each weighed by how much of the answer rests on it.

Every result carries notes (how a machine was picked, what a model assumed,
how the graph was replayed). Most describe set-up; a few decide whether the
answer can be trusted: host work kept at the time measured on A, a host
assumed because none was named, ops no model handles. A ``Note`` is the
note's text, a ``str`` (so that every producer that builds strings and every
consumer that prints, joins, compares or writes them keeps working: a plain
string is a note of severity "info"), with:

- ``about``: a stable key of what the note is about (``HOST_TIME``,
  ``HOST_ASSUMED`` ...), by which a command finds the note to weigh it;
  "" for free text;
- ``share``: the fraction (0-1) of the answer whose value rests on what the
  note assumes, None when not weighed. A forecast weighs along B's critical
  path (the ops and lags that make up its end to end: an op off the path
  does not move it); ``project`` and ``evaluate`` weigh by the GPU time on A
  of the ops concerned, over the ops they project;
- ``origin``: where it came from (``machine A``, ``models``, ``replay`` ...);
- ``severity`` (derived): ``DECISIVE`` when ``share`` exceeds
  ``DECISIVE_SHARE``, else ``INFO``.

Commands print the decisive notes under their headline and the others after
their tables (``--notes``); pages put them in the answer box; ``--json``
writes each note as a record (``record``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

#: A note is decisive when more than this fraction of the answer rests on what it assumes: an assumed value
#: off by a factor of two (a host twice as fast, a latency half as long) then moves the answer by more than 3 %.
DECISIVE_SHARE = 0.03

DECISIVE, INFO = "decisive", "info"
#: The severities, most severe first.
SEVERITIES = (DECISIVE, INFO)

# What a note is about (``Note.about``): the notes a command weighs.
HOST_TIME = "host-time"  # host work kept at (or scaled from) its time on A
HOST_ASSUMED = "host-assumed"  # a node's host was not named: one was assumed
LATENCY_KEPT = "latency-kept"  # launch and GPU dependency latencies kept from A's calibration
OPS_KEPT = "ops-kept"  # GPU ops no model handles keep their time on A
GPU_MISMATCH = "gpu-mismatch"  # the trace's GPU is not the source node's (--allow-gpu-mismatch)
LEVELS_UNKNOWN = "levels-unknown"  # a cache level's bandwidth is unknown: the roofline's interval widened
HOST_MEMORY_UNKNOWN = "host-memory-unknown"  # copies whose host memory (pinned or pageable) the trace omits
NO_API = "no-api"  # no host API records: GPU ops placed at their recorded offsets
RUNS_JOINED = "runs-joined"  # several runs in one file, each on its own clock, joined back to back


class Note(str):
    """One note: its text (this ``str``), ``about``, ``share`` and ``origin`` (see the module docstring)."""

    about: str
    share: float | None
    origin: str

    def __new__(cls, text: str, about: str = "", share: float | None = None, origin: str = "") -> Note:
        self = super().__new__(cls, text)
        self.about = about
        self.share = share
        self.origin = origin
        return self

    @property
    def severity(self) -> str:
        """``DECISIVE`` when more than ``DECISIVE_SHARE`` of the answer rests on the note, else ``INFO``."""
        return DECISIVE if self.share is not None and self.share > DECISIVE_SHARE else INFO

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled (a Dask worker's forecast) with its attributes; str's own reduction would drop them.
        return (Note, (str(self), self.about, self.share, self.origin))

    def __repr__(self) -> str:
        return f"Note({str(self)!r}, about={self.about!r}, share={self.share!r}, origin={self.origin!r})"


def about(note: str) -> str:
    """What ``note`` is about ("" for a plain string)."""
    return getattr(note, "about", "")


def share(note: str) -> float | None:
    """The share of the answer resting on ``note`` (None: not weighed, or a plain string)."""
    return getattr(note, "share", None)


def severity(note: str) -> str:
    """``DECISIVE`` or ``INFO`` (a plain string is ``INFO``)."""
    return getattr(note, "severity", INFO)


def retold(note: str, text: str, origin: str | None = None) -> str:
    """``text`` with ``note``'s attributes (a model's note prefixed with the models that made it); a plain
    string for a plain ``note``, unless ``origin`` is given."""
    if isinstance(note, Note):
        return Note(text, note.about, note.share, note.origin if origin is None else origin)
    return text if origin is None else Note(text, origin=origin)


def from_(notes: Iterable[str], origin: str) -> list[str]:
    """``notes`` with ``origin`` where they have none (plain strings become ``Note``), text unchanged."""
    return [n if getattr(n, "origin", "") else retold(n, str(n), origin) for n in notes]


def percent(fraction: float) -> str:
    """A share as the notes print it: ``62.4 %``, ``0.3 %``, ``under 0.1 %``, ``0 %``; ``100 %`` only for all of it
    (99.98 % prints ``99.9 %``: the rest is something else, and a reader takes ``100.0 %`` for all)."""
    if fraction <= 0:
        return "0 %"
    if fraction < 0.001:
        return "under 0.1 %"
    if fraction >= 1:
        return "100 %"
    return f"{min(100 * fraction, 99.9):.1f} %"


def weighed(note: str, fraction: float | None, detail: str) -> str:
    """``note`` with its ``share`` set to ``fraction`` and ``; detail`` (which says the number) appended; ``note``
    unchanged when ``fraction`` is None (nothing to weigh it by)."""
    if fraction is None:
        return note
    return Note(f"{note}; {detail}", about(note), float(fraction), getattr(note, "origin", ""))


def weigh_scoped(notes: Iterable[str], scopes: Mapping[str, tuple[Callable[[], float], str]], total_s: float,
                 of_what: str, seconds_text: Callable[[float], str]) -> list[str]:
    """``notes`` with each note whose ``about`` has a scope weighed: the scope's seconds (its callable, run only
    for a note that needs it) over ``total_s``, and ``; <scope text>: <seconds>, <percent> of <of_what>`` appended.

    ``scopes``: about -> (seconds the assumption covers, what they are). ``seconds_text`` formats seconds (the
    caller's formatter: this module imports nothing that prints). Notes without a scope are kept as they are.
    """
    out = []
    for note in notes:
        scope = scopes.get(about(note))
        if scope is None:
            out.append(note)
            continue
        seconds = scope[0]()
        fraction = min(seconds / total_s, 1.0)
        out.append(weighed(note, fraction, f"{scope[1]}: {seconds_text(seconds)}, {percent(fraction)} of {of_what}"))
    return out


def split(notes: Iterable[str]) -> tuple[list[str], list[str]]:
    """(decisive notes, largest share first; the others in their order)."""
    notes = list(notes)
    decisive = [n for n in notes if severity(n) == DECISIVE]
    decisive.sort(key=lambda n: -(share(n) or 0.0))
    return decisive, [n for n in notes if severity(n) != DECISIVE]


def ordered(notes: Iterable[str]) -> list[str]:
    """``notes`` with the decisive ones first (``split``)."""
    decisive, rest = split(notes)
    return decisive + rest


def record(note: str) -> dict[str, Any]:
    """``note`` as JSON: text, severity, share (0-1, null: not weighed), about ("" for free text), origin."""
    return {"text": str(note), "severity": severity(note), "share": share(note), "about": about(note),
            "origin": getattr(note, "origin", "")}


def records(notes: Iterable[str]) -> list[dict[str, Any]]:
    """``notes`` as JSON records, decisive first (``ordered``)."""
    return [record(n) for n in ordered(notes)]
