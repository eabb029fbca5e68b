"""The source comment beside each value of a catalogue TOML file is recovered by dotted key."""

from __future__ import annotations

from nodecast.machines.comments import split_comment, value_comments


def test_split_comment_ignores_hash_in_strings():
    """A # inside a string is part of the value, not a comment."""
    assert split_comment('name = "A # B"  # the name') == ('name = "A # B"  ', "the name")
    assert split_comment("x = 'C#' ") == ("x = 'C#' ", None)
    assert split_comment(r'y = "q\"#" # z') == (r'y = "q\"#" ', "z")


def test_value_comments_by_table_and_multiline_array():
    """Keys are prefixed by their table; an array over several lines takes its first comment."""
    text = """# header
a = 1   # top
b = 2
[peak_flops]
fp32 = 3e12  # [derived: 2 x 1.5e12]
[host_link]   # a table comment
kind = "pcie"  # slot
names = [
  "x",   # first
  "y",   # second
]
after = 1  # after the array
"""
    assert value_comments(text) == {"a": "top", "peak_flops.fp32": "[derived: 2 x 1.5e12]",
                                    "host_link.kind": "slot", "host_link.names": "first",
                                    "host_link.after": "after the array"}
