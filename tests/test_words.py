"""Counts in words: the noun agrees with the number."""

from nodecast.words import plural


def test_plural():
    """1 takes the singular; 0 and more the plural, regular or given; thousands are separated."""
    assert plural(1, "group") == "1 group"
    assert plural(0, "group") == "0 groups"
    assert plural(2, "copy", "copies") == "2 copies"
    assert plural(1, "copy", "copies") == "1 copy"
    assert plural(2900, "op pair") == "2,900 op pairs"
