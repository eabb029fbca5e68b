"""Evaluation box plots: an evaluation with nothing in it is refused in one line, with no file written."""

from __future__ import annotations

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.workflows.evaluate import Alignment, Evaluation
from nodecast.machines import load_machine
from nodecast.cost.project import project
from nodecast.report.figures.evaluate import error_boxplot
from nodecast.traces.trace import Trace


def test_empty_evaluation_is_refused(tmp_path):
    """No category to draw is an InputError naming --png (matplotlib raised 'Number of columns must be ...')."""
    trace = Trace.from_columns({"kind": [0], "start_ns": [0], "end_ns": [10]})
    machine = load_machine("titan")
    none = np.zeros(0, dtype=np.int64)
    ev = Evaluation(projection=project(trace, machine, machine), trace_b=trace,
                    alignment=Alignment(none, none, none, none), actual_s=np.zeros(0), projected_s={},
                    category=np.zeros(0, dtype=object), mask=np.zeros(0, dtype=bool))
    with pytest.raises(InputError, match="nothing was evaluated") as err:
        error_boxplot(ev, tmp_path / "box.png")
    assert err.value.key == "--png"
    assert list(tmp_path.iterdir()) == []
