"""No command replaces its input or one output with another (issue 23, item 1).

Every command that writes files refuses, before any work, an output that is
one of its inputs (same file by identity: another spelling, a symbolic link)
and two outputs on one file: one line, exit 2, nothing written, the input's
bytes unchanged. Each case below wrote over its input (or its first output)
with exit 0 before the check (``nodecast.fileio.check_outputs``).
"""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import pytest

from nodecast.cli import main

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"
ZOO = TRACES.parent / "kernel-zoo"
CSV = "nvprof-gputrace-csv_vectoradd_k40c.csv"
SRC = Path(__file__).resolve().parents[2] / "src" / "nodecast" / "machines"

#: A one-task DAG for ``simulate --dag`` (no StarPU files needed with --machine and --roofline-missing).
DAG = ('{"data": [{"name": "A", "size_bytes": 3686400}], '
       '"tasks": [{"kernel": "mystery", "access": [["A", "RW"]], "flops": 1e10}]}')
SIMULATE = ["simulate", "--dag", "d.json", "--machine", "h100-sxm5-server", "--roofline-missing"]


def _trace_csv(tmp: Path, writer=None, name: str = "t.csv") -> None:
    shutil.copyfile(TRACES / CSV, tmp / name)


def _kineto(tmp: Path, writer=None) -> None:
    (tmp / "k.json").write_bytes(gzip.decompress((TRACES / "kineto_alexnet-benchmark_a100.json.gz").read_bytes()))


def _ncu(tmp: Path, writer) -> None:
    (tmp / "ncu").mkdir()
    for f in sorted(TRACES.glob("ncu-csv_v100_*.csv")):
        shutil.copyfile(f, tmp / "ncu" / f.name)
    writer(tmp, "v100", "V100", 15.7e12, 900e9)
    writer(tmp, "h100", "H100", 66.9e12, 3.35e12)


def _dag(tmp: Path, writer=None) -> None:
    (tmp / "d.json").write_text(DAG)


def _pair(tmp: Path, writer=None) -> None:
    _trace_csv(tmp, name="a.csv")
    _trace_csv(tmp, name="b.csv")


def _folders(tmp: Path, writer=None) -> None:
    for side, gpu in (("A", "Titan"), ("B", "GTX-970")):
        (tmp / side).mkdir()
        shutil.copyfile(ZOO / gpu / "vectorAdd-1048576.csv", tmp / side / "vectorAdd-1048576.csv")


def _link(tmp: Path, writer=None) -> None:
    _trace_csv(tmp)
    os.symlink("t.csv", tmp / "link.csv")


def _machine_as(name: str):
    def make(tmp: Path, writer=None) -> None:
        shutil.copyfile(SRC / "catalogue" / "titan.toml", tmp / name)
    return make


def _sheet(tmp: Path, writer=None) -> None:
    shutil.copyfile(SRC / "gpus" / "h100-pcie-80gb.toml", tmp / "h100-pcie-80gb.toml")


# (argv run in tmp_path, what to create there: make(tmp_path, machine_writer), the option named in the error)
ONTO_AN_INPUT = {
    "replay -o": (["replay", "t.csv", "-o", "t.csv"], _trace_csv, "-o"),
    "replay -o, other spelling": (["replay", "./t.csv", "-o", "{tmp}/t.csv"], _trace_csv, "-o"),
    "replay -o, input through a symlink": (["replay", "link.csv", "-o", "t.csv"], _link, "-o"),
    "forecast -o": (["forecast", "t.csv", "--to", "summit", "-o", "t.csv"], _trace_csv, "-o"),
    "forecast --table": (["forecast", "t.csv", "--to", "summit", "--table", "t.csv"], _trace_csv, "--table"),
    "project -o": (["project", "t.csv", "--to", "summit", "-o", "t.csv"], _trace_csv, "-o"),
    "project --summary": (["project", "t.csv", "--to", "summit", "--summary", "t.csv"], _trace_csv, "--summary"),
    "evaluate -o on A": (["evaluate", "a.csv", "b.csv", "-o", "a.csv"], _pair, "-o"),
    "evaluate --table on B": (["evaluate", "a.csv", "b.csv", "--table", "b.csv"], _pair, "--table"),
    "evaluate folders --table on a file read": (
        ["evaluate", "A", "B", "--models", "default-kernel", "--table", "A/vectorAdd-1048576.csv"], _folders, "--table"),
    "convert -o": (["convert", "t.csv", "-o", "t.csv"], _trace_csv, "-o"),
    "replay --json onto Kineto": (["replay", "k.json", "--json", "k.json"], _kineto, "--json"),
    "replay --trace onto Kineto": (["replay", "k.json", "--trace", "k.json"], _kineto, "--trace"),
    "forecast --json onto Kineto": (["forecast", "k.json", "--to", "summit", "--json", "k.json"], _kineto, "--json"),
    "forecast --trace onto Kineto": (["forecast", "k.json", "--to", "summit", "--trace", "k.json"], _kineto,
                                     "--trace"),
    "inspect --json onto Kineto": (["inspect", "k.json", "--json", "k.json"], _kineto, "--json"),
    "kernels -o onto an ncu CSV": (
        ["kernels", "{ncu}", "--from", "v100.toml", "--to", "h100.toml", "-o",
         "ncu/ncu-csv_v100_deepcam-pytorch-lamb-opt__dram__bytes.sum.csv"], _ncu, "-o"),
    "simulate --json onto its --dag": ([*SIMULATE, "--json", "d.json"], _dag, "--json"),
    "simulate --trace onto its --dag": ([*SIMULATE, "--trace", "d.json"], _dag, "--trace"),
    "forecast --json onto its --to machine file": (["forecast", "t.csv", "--to", "./m.json", "--json", "m.json"],
                                                   lambda tmp, writer: (_trace_csv(tmp), _machine_as("m.json")(tmp)), "--json"),
    "curves --csv onto a --machines file": (["curves", "--machines", "./m.csv", "--csv", "m.csv"],
                                            _machine_as("m.csv"), "--csv"),
    "machines template -o onto its --gpu sheet": (
        ["machines", "template", "--gpu", "./h100-pcie-80gb.toml", "-o", "h100-pcie-80gb.toml"], _sheet, "-o"),
}

TWO_OUTPUTS = {
    "forecast --table X -o X": (["forecast", "t.csv", "--to", "summit", "--table", "o.csv", "-o", "o.csv"],
                                ("--table", "-o")),
    "project -o X --summary ./X": (["project", "t.csv", "--to", "summit", "-o", "o.csv", "--summary", "./o.csv"],
                                   ("-o", "--summary")),
    "replay --trace X --json X": (["replay", "t.csv", "--trace", "o.json", "--json", "o.json"], ("--trace", "--json")),
    "evaluate --table X --json X": (["evaluate", "t.csv", "t.csv", "--table", "o.json", "--json", "{tmp}/o.json"],
                                    ("--table", "--json")),
}


def _argv(argv: list[str], tmp: Path) -> list[str]:
    out = []
    for word in argv:
        if word == "{ncu}":
            out += sorted(f"ncu/{p.name}" for p in (tmp / "ncu").iterdir())
        else:
            out.append(word.replace("{tmp}", str(tmp)))
    return out


def _snapshot(tmp: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tmp)): (b"" if p.is_dir() else p.read_bytes()) for p in sorted(tmp.rglob("*"))}


def _refused(argv: list[str], tmp: Path, capsys) -> str:
    before = _snapshot(tmp)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("nodecast: error: ") and "Traceback" not in err, err
    assert _snapshot(tmp) == before  # the inputs' bytes unchanged, nothing written
    return err


@pytest.mark.parametrize("case", list(ONTO_AN_INPUT))
def test_an_output_onto_an_input_is_refused_before_any_work(case, tmp_path, monkeypatch, capsys, shared_traces,
                                                          machine_writer):
    argv, make, option = ONTO_AN_INPUT[case]
    if case.startswith("evaluate folders") and not ZOO.is_dir():
        pytest.skip(f"{ZOO} is absent")
    monkeypatch.chdir(tmp_path)
    make(tmp_path, machine_writer)
    err = _refused(_argv(argv, tmp_path), tmp_path, capsys)
    assert f": {option}: is the same file as the input " in err and "Choose another output path" in err


@pytest.mark.parametrize("case", list(TWO_OUTPUTS))
def test_two_outputs_on_one_file_are_refused_before_any_work(case, tmp_path, monkeypatch, capsys, shared_traces):
    argv, options = TWO_OUTPUTS[case]
    monkeypatch.chdir(tmp_path)
    _trace_csv(tmp_path)
    err = _refused(_argv(argv, tmp_path), tmp_path, capsys)
    first, second = options
    assert ": name the same file" in err and (f": {first} and {second}:" in err or f": {second} and {first}:" in err)


def test_simulate_two_outputs_on_one_file(tmp_path, monkeypatch, capsys):
    """simulate --json X --trace X: refused before the simulation."""
    monkeypatch.chdir(tmp_path)
    _dag(tmp_path)
    err = _refused([*SIMULATE, "--json", "s.json", "--trace", "s.json"], tmp_path, capsys)
    assert ": --json and --trace: name the same file" in err


def test_calibrate_host_only_onto_its_base_machine_file(tmp_path, monkeypatch, capsys):
    """calibrate --host-only -o M --base M would replace the base machine file: refused before measuring."""
    import nodecast.calibrate.host_copy as hc

    def refuse(**kw):
        raise AssertionError("measured although the output is the --base file")

    monkeypatch.setattr(hc, "measure_host_copy", refuse)
    monkeypatch.chdir(tmp_path)
    _machine_as("m.toml")(tmp_path)
    err = _refused(["calibrate", "--host-only", "--quick", "--base", "./m.toml", "-o", "m.toml"], tmp_path, capsys)
    assert ": -o: is the same file as the input ./m.toml" in err


def test_record_output_that_the_program_is_given(tmp_path, monkeypatch, capsys):
    """record -o F -- python prog.py F: F is the program's input; refused before the program runs."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prog.py").write_text("open('ran', 'w').write('yes')\n")
    (tmp_path / "data.sqlite").write_bytes(b"SQLite format 3\0")
    err = _refused(["record", "-o", "data.sqlite", "--", "python", "prog.py", "data.sqlite"], tmp_path, capsys)
    assert ": -o: is the same file as the input data.sqlite" in err


def test_outputs_beside_the_inputs_are_written(tmp_path, monkeypatch, capsys, shared_traces):
    """The check refuses only the same file: distinct outputs next to the input are written as before."""
    monkeypatch.chdir(tmp_path)
    _trace_csv(tmp_path)
    assert main(["replay", "t.csv", "-o", "ops.csv", "--json", "r.json"]) == 0
    assert (tmp_path / "ops.csv").is_file() and (tmp_path / "r.json").is_file()
    assert (tmp_path / "t.csv").read_bytes() == (TRACES / CSV).read_bytes()
