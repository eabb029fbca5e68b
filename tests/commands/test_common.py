"""--from/--to and --allow-gpu-mismatch of project and evaluate, on real traces (the shared data and the samples)."""

from __future__ import annotations

import pytest

from nodecast import cli

TITAN = "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"
SUMMIT = "sample:nvprof_ahead-bandwidthtest-htod-pinned_summit-v100"


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    """cli.main's exit code (argparse's SystemExit included), stdout and stderr."""
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def rtx3090(shared_traces):
    """A real Nsight Systems trace of Rodinia gaussian recorded on an RTX 3090 node (7 GPUs listed)."""
    return str(shared_traces / "nsys_rodinia-gaussian-4096_rtx3090_baseline.sqlite")


def test_rtx3090_trace_with_an_a100_source_is_refused(capsys, rtx3090):
    """The issue's case: an RTX 3090 trace projected --from an A100 node is one line naming both GPUs, exit 2."""
    code, out, err = run(capsys, ["project", rtx3090, "--from", "dgx-a100", "--to", "h100-sxm5-server"])
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "the trace ran on 'NVIDIA GeForce RTX 3090' (data sheet rtx-3090)" in err
    assert "--from dgx-a100's GPU 'A100-SXM4-40GB' (data sheet a100-sxm4-40gb)" in err
    assert "--allow-gpu-mismatch" in err


def test_allowed_mismatch_is_a_note(capsys, rtx3090):
    """--allow-gpu-mismatch projects as asked and says so in the notes."""
    code, out, _ = run(capsys, ["project", rtx3090, "--from", "dgx-a100", "--to", "h100-sxm5-server",
                                "--allow-gpu-mismatch"])
    assert code == 0
    assert "note: GPU mismatch allowed: the trace ran on 'NVIDIA GeForce RTX 3090'" in out


def test_omitted_from_uses_the_trace_gpu(capsys, rtx3090):
    """Without --from the trace's GPU name picks the sheet; the node and the assumed host are in the notes."""
    code, out, _ = run(capsys, ["project", rtx3090, "--to", "h100-sxm5-server", "--notes", "all"])
    assert code == 0
    assert "projected rtx-3090@xeon-platinum-8480c-2s -> h100-sxm5-server" in out
    assert "note: --from omitted: the trace's GPU 'NVIDIA GeForce RTX 3090' is data sheet rtx-3090" in out
    assert "note: A's host assumed to be the one B names: xeon-platinum-8480c-2s" in out


def test_evaluate_picks_both_nodes_from_the_traces(capsys):
    """evaluate without --from and --to composes the source from trace A and the target from trace B."""
    code, out, _ = run(capsys, ["evaluate", TITAN, SUMMIT, "--notes", "all"])
    assert code == 0
    assert "on tesla-k20x@xeon-platinum-8480c-2s" in out and "on v100-sxm2-16gb@xeon-platinum-8480c-2s" in out
    assert "note: --to omitted: the trace's GPU 'Tesla V100-SXM2-16GB' is data sheet v100-sxm2-16gb" in out


def test_evaluate_checks_the_target_trace_too(capsys):
    """evaluate checks --to against trace B: a K20X node for a V100 run is refused."""
    code, _, err = run(capsys, ["evaluate", TITAN, SUMMIT, "--from", "titan", "--to", "titan"])
    assert code == 2
    assert "--to: the trace ran on 'Tesla V100-SXM2-16GB' (data sheet v100-sxm2-16gb), not on --to titan's" in err


def test_matching_catalogue_machines_run_as_before(capsys):
    """The README quick start: the traces' GPUs are the catalogue machines' GPUs, so no note is added."""
    code, out, _ = run(capsys, ["evaluate", TITAN, SUMMIT, "--from", "titan", "--to", "summit"])
    assert code == 0
    assert "mismatch" not in out and "omitted" not in out and "not checked" not in out


def test_project_needs_to(capsys):
    """project still needs --to: a usage error, exit 2."""
    code, _, err = run(capsys, ["project", TITAN])
    assert code == 2 and "--to" in err
