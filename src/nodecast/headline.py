"""The numbers a result leads with: what ``--json`` writes under ``headline`` and the HTML page shows first.

It sits with the other ground modules (errors, values, text, words), below the models and workflows that
build results, not in ``report/``: the workflows make ``Number`` objects and ``report/`` only renders them.

A result object's ``headline()`` returns a list of ``Number`` (end-to-end
time on A and on B with its interval, a WMAPE, a makespan ...). The JSON
writer (``report.files``) and the HTML page (``report.html``) both take them
from there, so the page's big numbers and the JSON's are the same values.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Number:
    """One headline number: ``value`` in ``unit``, with its interval when there is one.

    ``unit`` is one of ``report.html.units.UNITS`` (``"s"``, ``"B"``,
    ``"B/s"``, ``"%"``, ``"x"`` ...; SI values: seconds, bytes, bytes/s);
    ``low``/``high`` bound the interval (same unit; None: no interval, which
    is not the same as one of zero width); ``note`` says what the interval
    is (``"spread of the three models"``). A ratio of two run times (``"x"``)
    is a speed-up, time on A / time on B, labelled as ``report.speedup``
    says, so that a reader never meets A / B in one place and B / A in
    another.
    """

    label: str
    value: float
    unit: str
    low: float | None = None
    high: float | None = None
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The fields as plain Python (JSON-ready)."""
        return asdict(self)
