"""Notes with a severity (src/nodecast/notes.py): strings that carry what they are about and how much of the answer
rests on them."""

from __future__ import annotations

import json
import pickle

from nodecast import notes as nn
from nodecast.notes import DECISIVE, DECISIVE_SHARE, INFO, Note


def test_a_note_is_a_string():
    """Code that takes strings takes a Note: equality, joining, membership, json."""
    n = Note("host assumed: x", nn.HOST_ASSUMED, 0.5)
    assert n == "host assumed: x" and "note: " + n == "note: host assumed: x" and n in ["host assumed: x"]
    assert json.loads(json.dumps([n])) == ["host assumed: x"]
    assert n.startswith("host assumed")


def test_severity_follows_the_share_and_one_threshold():
    """Decisive above DECISIVE_SHARE (3 %), info at or below it, unweighed, or for a plain string."""
    assert DECISIVE_SHARE == 0.03
    assert Note("a", share=0.031).severity == DECISIVE
    assert Note("a", share=DECISIVE_SHARE).severity == INFO
    assert Note("a").severity == INFO and nn.severity("plain") == INFO


def test_weighed_and_retold_keep_what_the_note_is_about():
    """weighed sets the share and appends the number; retold changes the text only; pickling keeps all."""
    n = nn.weighed(Note("host work kept", nn.HOST_TIME, origin="costs"), 0.62, "62.0 % of the end to end")
    assert n == "host work kept; 62.0 % of the end to end" and n.share == 0.62 and n.about == nn.HOST_TIME
    r = nn.retold(n, "ahead: " + n)
    assert (r.about, r.share, r.origin, r.severity) == (nn.HOST_TIME, 0.62, "costs", DECISIVE)
    back = pickle.loads(pickle.dumps(r))
    assert isinstance(back, Note) and (back, back.share, back.about) == (r, 0.62, nn.HOST_TIME)
    assert nn.weighed("plain", None, "x") == "plain" and nn.retold("plain", "p2") == "p2"


def test_split_puts_the_decisive_first_largest_first():
    """Decisive notes come first, the largest share first; the others keep their order."""
    notes = ["a", Note("b", share=0.1), Note("c", share=0.01), Note("d", share=0.9), "e"]
    assert nn.split(notes) == (["d", "b"], ["a", "c", "e"])
    assert [r["severity"] for r in nn.records(notes)] == [DECISIVE, DECISIVE, INFO, INFO, INFO]
    assert nn.records(notes)[0] == {"text": "d", "severity": DECISIVE, "share": 0.9, "about": "", "origin": ""}


def test_percent():
    """Shares print with one decimal, tiny ones as 'under 0.1 %'."""
    assert [nn.percent(x) for x in (0.996, 0.0312, 0.0004, 0.0)] == ["99.6 %", "3.1 %", "under 0.1 %", "0 %"]
    assert [nn.percent(x) for x in (0.99977, 1.0)] == ["99.9 %", "100 %"]
