"""``InputError.message``: one line that names the file, the key and the reason, whatever the input held."""

from __future__ import annotations

import os

from nodecast.errors import InputError


def test_message_parts_in_order():
    assert InputError("bad value", path="m.toml", key="gpu.sms", hint="Give an integer").message == (
        "m.toml: gpu.sms: bad value. Give an integer")


def test_message_shows_what_it_quotes_as_text_on_one_bounded_line():
    """A path with escape sequences, a newline and a byte that is not UTF-8, a key of 100,000 characters and a
    reason quoting a 1 MB name: one line, the escapes visible, each part cut to a bounded length that says how long
    it was (was: echoed whole, the terminal acting on the escapes)."""
    path = os.fsdecode(b"/data/run\x1b]0;title\x07\n\xff.csv")
    err = InputError(f"no data sheet matches the trace's GPU {'G' * 1_000_000!r}", path=path, key="k" * 100_000,
                     hint="Give --from\nMACHINE")
    message = err.message
    assert "\n" not in message and "\x1b" not in message and "\x07" not in message
    assert message.startswith("/data/run\\x1b]0;title\\x07\\n\\xff.csv: kkk")
    assert "(100,000 characters)" in message and "(1,000,040 characters)" in message
    assert message.endswith(". Give --from MACHINE")
    assert len(message) < 1_600
    message.encode("utf-8")  # strict UTF-8 takes it
    assert str(err) == message
