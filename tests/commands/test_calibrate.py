"""``nodecast calibrate`` through ``nodecast.cli.main``: no GPU here for real, and a fake session end to end."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import nodecast.calibrate as cal
from nodecast import cli
from nodecast.machines import load_machine, load_machine_file
from nodecast.models.transfer import AheadModel
from nodecast.traces import CopyKind, MemKind, OpKind, Trace


def _fakes():
    """tests/calibrate/fakes.py (loaded once, by path)."""
    name = "nodecast_calibrate_test_fakes"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).parents[1] / "calibrate" / "fakes.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


fakes = _fakes()


@pytest.fixture(autouse=True)
def only_calibrate_command(monkeypatch):
    """Build the parser with the calibrate subcommand only, so these tests do not depend on the others."""
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("calibrate",))


def run(argv: list[str]) -> int:
    """cli.main's exit code, including argparse's SystemExit on usage errors."""
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def user_error(capsys, argv: list[str], *fragments: str) -> str:
    """Exit code 2 and one stderr line containing every fragment."""
    code = run(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert err.count("\n") == 0 and "Traceback" not in err
    for f in fragments:
        assert f in err
    return err


class FakeSession:
    """What ``open_session`` returns, on a fake two-GPU node (budget forced tiny)."""

    def __init__(self, topology=None) -> None:
        self.topology = topology or fakes.topology(2)
        self.facts = {"cpu_governor": "performance on all 4 CPUs", "cuda": "NVIDIA driver 550.54.15, CUDA 12.4"}
        self.context = {"cuda_driver_version": "12.4", "caches": []}
        self.governor_warning = None
        self.driver = self.facts["cuda"]
        self.closed = False

    def measurer(self, *, gate: bool = True):
        """The fake measurer."""
        return fakes.FakeMeasurer()

    def close(self) -> None:
        """Nothing to free."""
        self.closed = True


@pytest.fixture
def session(monkeypatch):
    """open_session returns a FakeSession; plans get the tiny budget so the test is fast."""
    s = FakeSession()
    monkeypatch.setattr(cal, "open_session", lambda **kw: s)
    real = cal.plan.build_plan

    def tiny(topo, opts):
        from dataclasses import replace

        return real(topo, replace(opts, budget=fakes.TINY))

    monkeypatch.setattr(cal.plan, "build_plan", tiny)
    return s


@pytest.fixture
def no_session(monkeypatch):
    """open_session must not be reached (the command should fail before measuring)."""
    def refuse(**kw):
        raise AssertionError("open_session called although the command should have stopped before measuring")

    monkeypatch.setattr(cal, "open_session", refuse)


def test_list_needs_no_gpu(capsys):
    """--list prints every family without touching a GPU."""
    assert run(["calibrate", "--list"]) == 0
    out = capsys.readouterr().out
    assert "Comm_cudaMemcpyAsync_PinnedToGPU" in out and "Nodecast_GPU_Bandwidth_L2" in out


def test_no_gpu_here_for_real(capsys, tmp_path):
    """On this machine (no driver) calibrate exits 2 with one line saying what is missing, and writes nothing."""
    err = user_error(capsys, ["calibrate", "--quick", "--base", "titan", "-o", str(tmp_path / "m.toml")])
    assert "pip install '.[gpu]'" in err or "CUDA driver" in err or "CUDA device" in err
    assert list(tmp_path.iterdir()) == []


def test_without_cuda_python_the_error_says_pip_install(capsys, tmp_path, monkeypatch):
    """When cuda-python cannot be imported the one-line error names the pip command."""
    for name in ("cuda", "cuda.bindings", "cuda.cudart"):
        monkeypatch.setitem(sys.modules, name, None)
    err = user_error(capsys, ["calibrate", "--base", "titan", "-o", str(tmp_path / "m.toml")])
    assert "cuda-python is not installed" in err and "pip install '.[gpu]'" in err
    assert list(tmp_path.iterdir()) == []


def test_fake_session_end_to_end(capsys, tmp_path, session):
    """With a (fake) GPU: JSON and machine file are written, load, and the ahead model uses the measured 1-byte cost."""
    out = tmp_path / "m.toml"
    assert run(["calibrate", "--quick", "--base", "titan", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert "wrote" in captured.out and "htod_pinned" in captured.out
    assert session.closed
    machine = load_machine_file(out)
    assert machine.name == "titan-measured" and machine.gpu == load_machine("titan").gpu
    assert machine.measured.one_byte_s["htod_pinned"] == pytest.approx(fakes.fake_time_s("htod_pinned", 1))
    assert machine.measured.bandwidth_bps["htod_pinned"] == pytest.approx(fakes.BANDWIDTH_BPS["htod_pinned"])
    assert machine.measured.gpu_name == "Fake H100" and machine.measured.origin.endswith("--quick")
    assert "repeat until" in machine.measured.facts["method"]
    doc = json.loads((tmp_path / "m.benchmarks.json").read_text())
    assert doc["context"]["nodecast_quick"] is True and doc["benchmarks"][0]["name"].startswith("Comm_cudaMemcpyAsync")
    trace = Trace.from_columns({"kind": np.array([OpKind.MEMCPY]), "copy_kind": np.array([CopyKind.HTOD]),
                                "src_mem": np.array([MemKind.PINNED]), "dst_mem": np.array([MemKind.DEVICE]),
                                "bytes": np.array([1]), "start_ns": np.array([0]), "end_ns": np.array([1])})
    lo = AheadModel().one_byte(trace, load_machine("titan"), machine)
    assert list(lo.origin.values()) == ["target"]


def test_json_only(capsys, tmp_path, session):
    """--json alone writes the benchmark JSON and no machine file (no --base needed)."""
    out = tmp_path / "r.json"
    assert run(["calibrate", "--quick", "--json", str(out), "--only", "cudaMemcpyAsync_PinnedToGPU"]) == 0
    names = [b["name"] for b in json.loads(out.read_text())["benchmarks"] if b["run_type"] == "iteration"]
    assert names[0] == "Comm_cudaMemcpyAsync_PinnedToGPU_flush/0/0/0" and len(names) == 11
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_unknown_gpu_index(capsys, tmp_path, session):
    """--gpus 5 on a two-GPU node: one line naming the index and the GPUs there are, nothing written."""
    user_error(capsys, ["calibrate", "--gpus", "0,5", "--base", "titan", "-o", str(tmp_path / "m.toml")],
               "unknown GPU index 5", "this node has 2 GPUs: 0, 1")
    assert list(tmp_path.iterdir()) == []


def test_size_that_does_not_fit(capsys, tmp_path, session):
    """--max-size above the GPU's free memory: one line naming the size and the free memory, nothing written."""
    user_error(capsys, ["calibrate", "--max-size", "128GiB", "--base", "titan", "-o", str(tmp_path / "m.toml")],
               "--max-size", "does not fit", "79 GiB free")
    assert list(tmp_path.iterdir()) == []


def test_unwritable_output_is_refused_before_measuring(capsys, tmp_path, no_session):
    """An output folder that does not exist stops the command before any GPU is touched."""
    user_error(capsys, ["calibrate", "--base", "titan", "-o", str(tmp_path / "nope" / "m.toml")], "folder does not exist")
    user_error(capsys, ["calibrate", "--json", str(tmp_path)], "is a folder")


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--base", "titan"], "nothing to write"),
    (["-o", "m.toml"], "needs --base"),
    (["--base", "no-such-machine", "-o", "m.toml"], "unknown machine"),
    (["--json", "r.json", "--gpus", "zero"], "not a list of GPU indices"),
    (["--json", "r.json", "--max-size", "huge"], "not a size"),
    (["--json", "r.json", "--budget-s", "-1"], "--budget-s"),
    (["--quick", "--json", "r.json", "--budget-s", "1e308"], "--budget-s: must be a number of seconds > 0 and <= 3600"),
    (["--json", "r.json", "--budget-s", "inf"], "--budget-s"),
    (["--json", "r.json", "--budget-s", "nan"], "--budget-s"),
    (["--json", "r.json", "--gpus", "-1"], "--gpus: GPU index -1 is negative"),
    (["--json", "r.json", "--gpus", "0,0"], "--gpus: a GPU is listed twice"),
    (["--json", "r.json", "--only", "nosuch"], "--only: no benchmark family starts with nosuch"),
    (["--json", "r.json", "--only", ""], "--only: empty family list"),
    (["--json", "r.json", "--only", " , "], "--only: empty family list"),
    (["--json", "r.json", "--name", ""], "--name: '' is not a machine name"),
    (["--base", "titan", "-o", "m.toml", "--name", "a/b"], "--name: 'a/b' is not a machine name"),
    (["--json", "r.json", "--min-size", "1GiB", "--max-size", "1MiB"], "--min-size"),
    (["--json", "r.json", "--max-size", "99999999999GiB"], "--max-size: size '99999999999GiB' is above 1 PiB"),
    (["--json", "r.json", "--max-size", "2^99"], "above 1 PiB"),
    (["--base", "titan", "-o", "n.xyz"], "n.xyz: cannot write a machine file as .xyz"),
    (["--json", "r.xyz"], "r.xyz: cannot write the benchmark results as .xyz"),
])
def test_bad_input_before_measuring(capsys, tmp_path, monkeypatch, no_session, argv, fragment):
    """Bad options are one line and exit 2, without opening a GPU session."""
    monkeypatch.chdir(tmp_path)
    user_error(capsys, ["calibrate", *argv], fragment)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [
    ["--quick", "--json", "r.json", "--budget-s", "1e308"],
    ["--json", "r.json", "--gpus", "-1"],
    ["--json", "r.json", "--only", "nosuch"],
    ["--base", "titan", "-o", "n.xyz"],
    ["--quick", "--json", "r.json", "--only", ""],
    ["--quick", "--json", "r.json", "--name", ""],
    ["--quick", "--json", "r.json", "--name", "a/b"],
])
def test_option_mistakes_come_before_the_missing_gpu(capsys, tmp_path, monkeypatch, argv):
    """Without cuda-python (as on a machine with no GPU), a bad option is still what the one line names."""
    for name in ("cuda", "cuda.bindings", "cuda.cudart"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.chdir(tmp_path)
    err = user_error(capsys, ["calibrate", *argv])
    assert "cuda-python" not in err and "pip install" not in err
    assert list(tmp_path.iterdir()) == []


# -- --host-only: one host thread's copy rate, no GPU (issue 12) --------------------------------------------------


def test_host_only_measures_here_and_writes_the_machine(capsys, tmp_path, no_session):
    """--host-only measures this host's memcpy rate for real, without a GPU, into [measured], keeping the base's
    measured values; the pageable model then uses it."""
    out = tmp_path / "m.toml"
    assert run(["calibrate", "--host-only", "--quick", "--base", "h100-pcie-server", "-o", str(out)]) == 0
    assert "host copy, one thread:" in capsys.readouterr().out
    machine = load_machine_file(out)
    rate, where = machine.host_copy_bandwidth()
    assert 1e8 < rate < 1e12 and where.startswith("measured: nodecast calibrate")
    assert machine.measured.gpu_peak_flops == load_machine("h100-pcie-server").measured.gpu_peak_flops
    assert "memmove" in machine.measured.facts["host_copy"]


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--host-only", "--base", "titan"], "give -o MACHINE.toml and --base NAME"),
    (["--host-only", "-o", "X/m.toml"], "give -o MACHINE.toml and --base NAME"),
    (["--host-only", "--base", "titan", "-o", "X/m.toml", "--json", "X/r.json"], "--json does not apply"),
    (["--host-only", "--base", "titan", "-o", "X/m.txt"], ".toml"),
])
def test_host_only_option_mistakes(capsys, tmp_path, no_session, argv, fragment):
    """--host-only's option mistakes are one line, exit 2, nothing written, no GPU looked for."""
    argv = [a.replace("X", str(tmp_path)) for a in argv]
    user_error(capsys, ["calibrate", *argv], fragment)
    assert list(tmp_path.iterdir()) == []


def test_full_run_adds_the_host_copy_rate(capsys, tmp_path, session):
    """A (fake-GPU) calibration also measures the host copy rate for real and writes it beside the copy classes."""
    out = tmp_path / "m.toml"
    assert run(["calibrate", "--quick", "--base", "titan", "-o", str(out)]) == 0
    machine = load_machine_file(out)
    assert machine.measured.host_copy_bandwidth_bps > 1e8
    assert machine.host_copy_bandwidth()[1].startswith("measured: nodecast calibrate")
