"""Optional dependencies (``nodecast.extras``): the default install runs the main job and its page; a feature whose
extra is absent is one line naming the extra (exit 2), before any work and with no file written.

The commands run in a child Python in which the extra's modules are made unimportable (``sys.modules[name] = None``:
``import name`` raises ModuleNotFoundError and ``importlib.util.find_spec`` finds nothing, as when the package is not
installed), so that these tests run in the full test environment too.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

FIGURES = ("matplotlib", "mpl_toolkits")
PARALLEL = ("dask", "distributed")

_RUN_WITHOUT = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None  # as if not installed
sys.argv = ["nodecast", *sys.argv[2:]]
from nodecast.__main__ import main
sys.exit(main())
"""

PINNED_A = "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"
PINNED_B = "sample:nvprof_ahead-bandwidthtest-htod-pinned_summit-v100"
QUICK_START = ["evaluate", PINNED_A, PINNED_B, "--from", "titan", "--to", "summit"]
SWEEP = ["simulate", "cholesky", "--sizes", "1920,2880", "--machine", "summit", "--roofline-missing"]


def nodecast_without(modules, *argv: str, cwd: Path) -> subprocess.CompletedProcess:
    """``nodecast ARGV`` in a child process in which ``modules`` cannot be imported."""
    return subprocess.run([sys.executable, "-c", _RUN_WITHOUT, ",".join(modules), *argv], capture_output=True,
                          text=True, cwd=cwd, timeout=600, check=False)


def one_line_naming(proc: subprocess.CompletedProcess, extra: str) -> str:
    """The child's stderr, checked to be one error line (exit 2) that says which extra to install."""
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert f"pip install 'nodecast[{extra}]'" in proc.stderr, proc.stderr
    return proc.stderr


def test_quick_start_and_its_page_run_without_the_extras(tmp_path):
    """The README's quick start and its --html page need neither matplotlib nor Dask (was: ModuleNotFoundError:
    evaluate imported matplotlib to check a --png it was not given)."""
    proc = nodecast_without(FIGURES + PARALLEL, *QUICK_START, "--html", "page.html", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "WMAPE" in proc.stdout and "Traceback" not in proc.stderr
    assert "Bokeh" in (tmp_path / "page.html").read_text(encoding="utf-8")


def test_curves_table_runs_without_matplotlib(tmp_path):
    """``nodecast curves`` without -o prints its table: only the figure needs matplotlib."""
    proc = nodecast_without(FIGURES, "curves", "--machines", "titan,summit", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "GB/s" in proc.stdout


@pytest.mark.parametrize("argv", [
    [*QUICK_START, "--png", "out.png"],
    ["forecast", PINNED_A, "--from", "titan", "--to", "summit", "--png", "out.png"],
    ["inspect", PINNED_A, "--png", "out.png"],
    ["curves", "--machines", "titan,summit", "-o", "out.png"],
    ["roofline", "metrics.csv", "--from", "v100-pcie-server", "--to", "h200-node", "--kernel", "k", "-o", "out.png"],
    [*SWEEP, "--plot", "out.png"],
    ["simulate", "cholesky", "--size", "1920", "--machine", "summit", "--roofline-missing", "--gantt", "out.png"],
], ids=["evaluate", "forecast", "inspect", "curves", "roofline", "simulate-plot", "simulate-gantt"])
def test_a_figure_without_matplotlib_is_one_line_naming_the_extra(tmp_path, argv):
    """Every figure option without matplotlib: exit 2, one line saying ``pip install 'nodecast[figures]'``, before
    any work (no figure, no other output written)."""
    proc = nodecast_without(FIGURES, *argv, cwd=tmp_path)
    one_line_naming(proc, "figures")
    assert proc.stdout == ""
    assert not (tmp_path / "out.png").exists()


@pytest.mark.parametrize("argv", [
    ["forecast", PINNED_A, "--from", "titan", "--to", "titan,summit", "--jobs", "2"],
    ["forecast", PINNED_A, "--from", "titan", "--to", "titan,summit", "--cluster", "tcp://127.0.0.1:9"],
    [*SWEEP, "--jobs", "2"],
    [*SWEEP, "--cluster", "tcp://127.0.0.1:9"],
], ids=["forecast-jobs", "forecast-cluster", "simulate-jobs", "simulate-cluster"])
def test_parallel_options_without_dask_are_one_line_naming_the_extra(tmp_path, argv):
    """--jobs N and --cluster run on Dask: without it, one line saying ``pip install 'nodecast[parallel]'``
    (was: a ModuleNotFoundError traceback once the work had started)."""
    proc = nodecast_without(PARALLEL, *argv, cwd=tmp_path)
    one_line_naming(proc, "parallel")
    assert proc.stdout == ""


def test_several_targets_without_dask_run_one_at_a_time_with_a_note(tmp_path):
    """Without --jobs, a comparison of several targets runs without Dask, one at a time, and says so in one line."""
    proc = nodecast_without(PARALLEL, "forecast", PINNED_A, "--from", "titan", "--to", "titan,summit",
                            cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "summit" in proc.stdout
    notes = [line for line in proc.stderr.splitlines() if "nodecast[parallel]" in line]
    assert len(notes) == 1 and "one at a time" in notes[0], proc.stderr


def test_large_sweeps_without_dask_run_in_this_process(monkeypatch):
    """The automatic choice (no job count) of a sweep large enough for a local cluster stays in this process when
    Dask is absent (was: ModuleNotFoundError from the cluster start)."""
    from nodecast.workflows import simulate_sweep as sweep
    from nodecast.runtime.simulation import RuntimeOptions
    from nodecast.runtime.setup import SimSetup, platform_and_models

    monkeypatch.setattr(sweep, "AUTO_PARALLEL_TASKS", 0)  # every sweep counts as large
    monkeypatch.setattr(sweep, "default_jobs", lambda: 4)
    for name in PARALLEL:
        monkeypatch.setitem(sys.modules, name, None)
    plat, models = platform_and_models(SimSetup(machine="summit", roofline_missing=True))
    cases = [sweep.Case(RuntimeOptions(), "cholesky", n, 960) for n in (1920, 2880)]
    rows = sweep.run_cases(cases, plat, models)
    assert [r["tasks"] for r in rows] == [4, 10]


def test_large_comparisons_without_dask_run_in_this_process(monkeypatch):
    """The same for a forecast of several targets."""
    from nodecast.workflows import targets
    from nodecast.workflows.forecast import read_trace_and_api

    monkeypatch.setattr(targets, "AUTO_PARALLEL_OPS", 0)
    monkeypatch.setattr(targets, "_default_jobs", lambda: 4)
    for name in PARALLEL:
        monkeypatch.setitem(sys.modules, name, None)
    trace, api = read_trace_and_api(PINNED_A)
    comp = targets.compare_targets(trace, api, targets.target_specs(["titan", "summit"], []), source="titan")
    assert len(comp.rows) == 2


def test_default_install_leaves_out_the_extras():
    """pyproject.toml: matplotlib and Dask are extras (``figures``, ``parallel``, both in ``all``), not defaults;
    ``test`` brings both so that CI runs every test; every extra ``nodecast.extras`` names exists."""
    from nodecast import extras

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]

    def names(requirements):
        return {r.split(";")[0].split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower()
                for r in requirements}

    optional = project["optional-dependencies"]
    assert not names(project["dependencies"]) & {"matplotlib", "distributed", "dask"}
    assert {"matplotlib"} <= names(optional["figures"]) and {"distributed"} <= names(optional["parallel"])
    for extra in ("all", "test"):
        assert "nodecast[figures,parallel]" in [r.replace(" ", "") for r in optional[extra]], extra
    for module, (extra, _) in extras.EXTRAS.items():
        assert extra in optional, module
