"""``nodecast.text.shown``: what is read from input prints as text, on one line, within a bounded length."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from nodecast.text import LIMIT, shown


@pytest.mark.parametrize(("raw", "visible"), [
    ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),  # sets the window title
    ("\x1b[2J", "\\x1b[2J"),  # clears the screen
    ("\x1b]8;;https://example.com\x1b\\y\x1b]8;;\x1b\\", "\\x1b]8;;https://example.com\\x1b\\y\\x1b]8;;\\x1b\\"),
    ("a\nb\rc\td", "a\\nb\\rc\\td"),
    ("\x00\x7f\x85\x9b", "\\x00\\x7f\\x85\\x9b"),  # NUL, DEL, NEL and the C1 CSI
    ("abc\u202edef\u2066\u2028", "abc\\u202edef\\u2066\\u2028"),  # right-to-left override, isolate, line separator
    (os.fsdecode(b"trace\xff\xfe.csv"), "trace\\xff\\xfe.csv"),  # a non-UTF-8 file name
    ("\ud800", "\\ud800"),
])
def test_control_characters_and_undecodable_bytes_are_shown_as_escapes(raw, visible):
    """Every character that would act on the terminal, break the line or fail to encode is written as its escape."""
    assert shown(raw) == visible
    visible.encode("utf-8")  # strict UTF-8 takes it


@pytest.mark.parametrize("text", ["[/]", "[bold]x[/bold]", "[link=https://example.com]y[/link]", "Tesla V100-SXM2-16GB",
                                  "GeForce RTX 3080 — µs", "C:\\traces\\run.csv", ":smile:"])
def test_printable_text_and_markup_are_kept_as_they_are(text):
    """Brackets, non-ASCII letters and backslashes are text: nothing is added (the renderers never read markup)."""
    assert shown(text) == text


def test_a_path_bytes_and_other_values_become_text():
    assert shown(Path("/tmp") / os.fsdecode(b"a\xff")) == "/tmp/a\\xff"
    assert shown(b"k\xffernel") == "k\\xffernel"
    assert shown(12.5) == "12.5"


def test_a_long_value_keeps_its_start_and_end_and_says_its_length():
    """A million-character name is cut to the limit around an ellipsis, the file name at its end kept."""
    name = "/data/" + "a" * 1_000_000 + "/trace.csv"
    text = shown(name)
    assert len(text) <= LIMIT
    assert text.startswith("/data/aaa") and text.endswith("a/trace.csv (1,000,016 characters)")
    assert "…" in text
    assert shown("x" * 100, limit=100) == "x" * 100
    assert len(shown("x" * 101, limit=100)) <= 100


def test_escapes_count_towards_the_limit_and_shown_text_is_shown_unchanged():
    """300 escape characters print as at most LIMIT characters; showing the result again changes nothing."""
    text = shown("\x1b" * 300)
    assert len(text) <= LIMIT and "\x1b" not in text and text.endswith("(300 characters)")
    for value in (text, shown("n" * 10_000), shown("\x1b[2J" * 100), shown("ok")):
        assert shown(value) == value


def test_work_does_not_grow_with_the_value():
    """Ten million characters take no longer to show than a line does (bounded by the limit, not the value)."""
    start = time.perf_counter()
    for _ in range(10):
        shown("\x1b" * 10_000_000)
    assert time.perf_counter() - start < 2.0
