"""The one way nodecast compares two run times: the speed-up, time on A / time on B.

Above 1, B (the target) is faster: 2× reads "twice as fast on B". Every
table, page, headline and figure that shows how A and B compare uses this
ratio and its label, so that a reader never meets A / B in one place and
B / A in another (issue 18).
"""

from __future__ import annotations

import math

#: The column and card label of the speed-up.
SPEEDUP = "speed-up (A / B)"
#: How to read it, said once beside the label.
MEANING = "above 1: B is faster"


def speedup(on_a_s: float, on_b_s: float) -> float:
    """``on_a_s / on_b_s`` (seconds on A over seconds on B): NaN when B's time is 0 or missing."""
    if not on_b_s or math.isnan(on_b_s):
        return math.nan
    return on_a_s / on_b_s
