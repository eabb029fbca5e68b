"""``machines.results``: the catalogue, one machine and a comparison as results whose dicts are ``--json``'s."""

from __future__ import annotations

import io
import json

from rich.console import Console

from nodecast.cli import main
from nodecast.machines import catalogue_names, load_machine
from nodecast.machines.compare import diff_machines, machine_summary
from nodecast.machines.results import catalogue, machine_diff, machine_view
from nodecast.report import terminal


def test_results_hold_what_json_prints(capsys):
    """as_dict() of each result is what `machines ... --json` prints, and holds the compare module's values."""
    a, b = load_machine("summit"), load_machine("h200-node")
    view, diff, cat = machine_view(a), machine_diff(a, b), catalogue()
    assert view.as_dict() == machine_summary(a)
    assert diff.as_dict() == {"a": "summit", "b": "h200-node", "rows": diff_machines(a, b)}
    assert [m["name"] for m in cat.machines] == list(catalogue_names()) and cat.unreadable == []
    for argv, result in ((["show", "summit"], view), (["diff", "summit", "h200-node"], diff), (["list"], cat)):
        assert main(["machines", *argv, "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(result.as_dict()))


def test_terminal_renders_the_diff_with_ratios():
    """The comparison prints one row per quantity with both values and B/A."""
    out = io.StringIO()
    terminal.render(machine_diff(load_machine("summit"), load_machine("h200-node")), Console(file=out, width=200))
    text = out.getvalue()
    assert "summit (A) vs h200-node (B)" in text and "B/A" in text and "×" in text
