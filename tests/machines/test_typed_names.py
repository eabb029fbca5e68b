"""Machine names as people type them (issue 18, item 2): the shipped catalogue, not test sheets."""

from __future__ import annotations

import pytest

from nodecast.cli import main
from nodecast.errors import InputError
from nodecast.machines import load_machine
from nodecast.machines.typed_names import typed_words


@pytest.mark.parametrize(("typed", "canonical"), [
    ("H100 SXM", "h100-sxm5-80gb@xeon-platinum-8480c-2s"),
    ("H100-SXM5", "h100-sxm5-80gb@xeon-platinum-8480c-2s"),
    ("h100sxm", "h100-sxm5-80gb@xeon-platinum-8480c-2s"),
    ("H100 PCIe", "h100-pcie-80gb@xeon-platinum-8480c-2s"),
    ("H100-SXM5-80GB", "h100-sxm5-80gb@xeon-platinum-8480c-2s"),
    ("MI300X", "mi300x@xeon-platinum-8480c-2s"),
    ("B200", "b200@xeon-platinum-8480c-2s"),
    ("h200", "h200-sxm-141gb@xeon-platinum-8480c-2s"),
    ("h200x8", "h200-sxm-141gbx8@xeon-platinum-8480c-2s"),
    ("H200-Node", "h200-node"),
    ("h200 node", "h200-node"),
    ("SUMMIT", "summit"),
    ("h100 sxm x8", "h100-sxm5-80gbx8@xeon-platinum-8480c-2s"),
    ("H100-SXM5x8@EPYC-7742-2s", "h100-sxm5-80gbx8@epyc-7742-2s"),
    ("A100 SXM4 80 GB", "a100-sxm4-80gb@xeon-platinum-8480c-2s"),
    ("NVIDIA Tesla T4", "t4@xeon-platinum-8480c-2s"),
    ("k40", "tesla-k40@xeon-platinum-8480c-2s"),
])
def test_short_forms_resolve(typed, canonical):
    """Case, brand words, separators, sizes written apart and a count suffix do not change which machine is meant."""
    assert load_machine(typed).name == canonical


@pytest.mark.parametrize(("typed", "listed"), [
    ("H100", ["h100-pcie-80gb", "h100-sxm5-80gb", "h100-pcie-server", "h100-sxm5-server"]),
    ("NVIDIA H100", ["h100-pcie-80gb", "h100-sxm5-80gb"]),
    ("h100x8", ["h100-pcie-80gb", "h100-sxm5-80gb"]),
    ("h100-node", ["h100-pcie-server", "h100-sxm5-server"]),
    ("A100 80GB", ["a100-pcie-80gb", "a100-sxm4-80gb"]),
])
def test_ambiguous_lists_candidates(typed, listed):
    """A name that fits several GPUs is one line naming every candidate, never a guess."""
    with pytest.raises(InputError) as info:
        load_machine(typed)
    msg = info.value.message
    assert "could mean" in msg and "\n" not in msg
    for name in listed:
        assert name in msg


def test_unknown_lists_sheet_keys_and_composed_form():
    """With no close name, the hint lists the nodes, the data-sheet keys and the GPU[xN][@HOST] form."""
    with pytest.raises(InputError) as info:
        load_machine("qqqqqq")
    msg = info.value.message
    assert "h100-sxm5-server" in msg and "h100-sxm5-80gb" in msg and "GPU[xN][@HOST]" in msg


def test_typed_words():
    assert typed_words("NVIDIA GeForce RTX 3090") == ["rtx", "3090"]
    assert typed_words("A100 80 GB") == ["a100", "80gb"]


def test_cli_to_h100_is_one_line(capsys):
    """`--to H100` on a real command: exit 2 with the candidates, not 'Did you mean gh200?'."""
    code = main(["project", "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x", "--from", "titan",
                 "--to", "H100"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "h100-sxm5-80gb" in err[0] and "gh200" not in err[0]


def test_cli_to_h100_sxm_runs(capsys):
    code = main(["project", "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x", "--from", "titan",
                 "--to", "H100 SXM", "--models", "ahead"])
    assert code == 0
    assert "h100-sxm5-80gb" in capsys.readouterr().out
