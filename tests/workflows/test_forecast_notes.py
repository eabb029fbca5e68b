"""The notes that decide whether to trust a forecast come first, with their share of the answer (issue 18 item 4)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from nodecast.cli import main
from nodecast.notes import DECISIVE, DECISIVE_SHARE, HOST_ASSUMED, HOST_TIME, percent

VECTORADD = "nvprof_vectoradd-1M_t4.nvvp"


@pytest.fixture(scope="module")
def vectoradd_runs(shared_dir):
    """The vectoradd forecast T4 -> H100 SXM printed by default, with --notes all, with --notes none, and as JSON."""
    out = {}
    for key, extra in (("default", []), ("all", ["--notes", "all"]), ("none", ["--notes", "none"]),
                       ("json", ["--json"])):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            try:
                code = main(["forecast", str(shared_dir / VECTORADD), "--to", "h100-sxm5-server", *extra])
            except SystemExit as exc:  # a usage error
                code = exc.code
        out[key] = buf.getvalue() if code == 0 else f"exit code {code}"
    return out


def test_json_notes_carry_their_severity(vectoradd_runs):
    """--json: every note is a record with its severity and share; host work kept is decisive (it is nearly the
    whole end to end of vectoradd), so is the host assumed for the T4 node; the decisive ones come first."""
    notes = json.loads(vectoradd_runs["json"])["notes"]
    assert all(set(n) >= {"text", "severity", "share", "about"} for n in notes)
    decisive = [n for n in notes if n["severity"] == DECISIVE]
    assert notes[:len(decisive)] == decisive
    host = next(n for n in decisive if n["about"] == HOST_TIME)
    assert host["share"] > 0.9 and host["text"].startswith("host work kept as measured on A")
    assert f"{percent(host['share'])} of the forecast's end to end" in host["text"]
    assert any(n["about"] == HOST_ASSUMED for n in decisive)
    assert all(n["share"] is None or n["share"] <= DECISIVE_SHARE for n in notes[len(decisive):])
    assert len(notes) > len(decisive) + 5  # the others are still there


def test_decisive_notes_print_under_the_headline(vectoradd_runs):
    """By default the decisive notes follow the end-to-end table, before the other tables; the others are counted
    on the last line (--notes all prints them)."""
    doc = json.loads(vectoradd_runs["json"])
    decisive = [n["text"] for n in doc["notes"] if n["severity"] == DECISIVE]
    lines = vectoradd_runs["default"].splitlines()
    first_note = next(i for i, x in enumerate(lines) if x.startswith("note: "))
    assert lines[first_note:first_note + len(decisive)] == [f"note: {n}" for n in decisive]
    assert first_note < next(i for i, x in enumerate(lines) if x.startswith("GPU time per category"))
    assert [x for x in lines if x.startswith("note: ")] == [f"note: {n}" for n in decisive]
    assert lines[-1] == f"{len(doc['notes']) - len(decisive)} more notes: --notes all prints them"


def test_notes_all_lists_every_note_and_none_none(vectoradd_runs):
    """--notes all: the decisive notes under the headline, then every other note after the tables; --notes none:
    no note."""
    doc = json.loads(vectoradd_runs["json"])
    printed = [x for x in vectoradd_runs["all"].splitlines() if x.startswith("note: ")]
    assert printed == [f"note: {n['text']}" for n in doc["notes"]]
    assert "note" not in vectoradd_runs["none"] and "--notes all" not in vectoradd_runs["none"]
