"""``report/{terminal,files,figures}/simulate.py``: a simulation's text, files and figures from its result objects,
on StarPU's real calibration of attila (../shared/data/starpu)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from nodecast.report import figures, files, terminal
from nodecast.report.files.simulate import write_csv, write_json
from nodecast.report.terminal.simulate import summary_lines, sweep_lines
from nodecast.graph.apps import cholesky
from nodecast.models.history import KernelModels
from nodecast.engine.platform import Platform
from nodecast.runtime.simulation import RuntimeOptions, Simulation
from nodecast.workflows.simulate_sweep import run_sweep

STARPU = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "starpu"
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def setup():
    if not STARPU.is_dir():
        pytest.skip(f"shared StarPU data not found at {STARPU}")
    plat = Platform.from_starpu(STARPU / "sampling" / "bus" / "attila.platform.v4.xml")
    return plat, KernelModels(STARPU / "sampling" / "codelets" / "45", "attila")


@pytest.fixture(scope="module")
def run(setup):
    """Cholesky 3840 with dmda, trace recorded."""
    return Simulation(cholesky(3840, 960), *setup, RuntimeOptions(trace=True)).run()


def _printed(result) -> list[str]:
    out = io.StringIO()
    terminal.render(result, Console(file=out, width=80))
    return out.getvalue().splitlines()


def test_terminal_prints_the_summary_lines_whole(run, setup):
    """A run prints its summary lines unwrapped, in any console width: headline, workers, memory, links, notes."""
    lines = summary_lines(run)
    assert _printed(run) == lines
    assert lines[0].startswith(f"{run.app} on attila with dmda: makespan {run.makespan_s * 1e3:.1f} ms")
    assert sum(line.startswith("CUDA") for line in lines) >= 6  # three workers, three GPU memories
    assert lines[-len(run.notes):] == [f"note: {n}" for n in run.notes]
    sweep = run_sweep(RuntimeOptions(), *setup, app="cholesky", sizes=[1920], schedulers=["dmda", "eager"])
    assert _printed(sweep) == sweep_lines(sweep) and len(sweep_lines(sweep)) == 3


def test_files_keep_the_simulators_layout(run, setup, tmp_path):
    """--json of a run is its summary (two-space indent, sorted keys); of a sweep its rows; --csv a row per run;
    files.document gives the same summary."""
    path = write_json(run, tmp_path / "run.json")
    assert path.read_text() == json.dumps(run.summary(), indent=2, sort_keys=True) + "\n"
    assert files.document(run) == run.summary()
    sweep = run_sweep(RuntimeOptions(), *setup, app="cholesky", sizes=[1920, 2880], schedulers=["dmda"])
    assert json.loads(write_json(sweep, tmp_path / "sweep.json").read_text()) == sweep.rows
    text = write_csv(sweep, tmp_path / "sweep.csv").read_text().splitlines()
    assert text[0] == "app,matrix_size,scheduler,tasks,makespan_s,gflops,evictions,purges" and len(text) == 3
    assert files.document(sweep)["headline"][0]["value"] == max(r["gflops"] for r in sweep.rows) * 1e9


def test_figures_gantt_and_sweep(run, setup, tmp_path):
    """draw() of a run is its Gantt chart (the same bytes twice), of a sweep GFlop/s against size; no trace, no Gantt."""
    a, b = figures.draw(run, tmp_path / "a.png"), figures.draw(run, tmp_path / "b.png")
    assert a.read_bytes()[:8] == PNG and a.read_bytes() == b.read_bytes()
    sweep = run_sweep(RuntimeOptions(), *setup, app="cholesky", sizes=[1920, 2880], schedulers=["dmda"])
    assert figures.draw(sweep, tmp_path / "s.svg").read_text().lstrip().startswith("<?xml")
    plain = Simulation(cholesky(1920, 960), *setup, RuntimeOptions()).run()
    with pytest.raises(ValueError, match="no trace"):
        figures.draw(plain, tmp_path / "c.png")
    assert not (tmp_path / "c.png").exists()
