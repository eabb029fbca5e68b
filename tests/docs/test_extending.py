"""docs/extending.md's four worked examples work as the page shows them (issue 20, deliverable 3).

Each module is taken from the page (the fenced block after ``<!-- example: NAME PATH -->``), written to a file
and imported; its registry line is applied with monkeypatch, so the real registries are as they were after each
test; then it runs on real traces. The page's registry diffs (``<!-- registry: NAME PATH -->``) must still match
the code around them, and each module may import only what the layer of its PATH may (``tests/test_layers.py``).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import io
import re
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from rich.console import Console

import nodecast
from nodecast.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "extending.md"
SAMPLE = "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"
EXAMPLES = ("reader", "model", "scheduler", "report")


@functools.cache
def _marked(kind: str) -> dict[str, tuple[str, str]]:
    """Name -> (PATH, the fenced block's text) of every ``<!-- KIND: NAME PATH -->`` marker of the page."""
    found = {}
    for m in re.finditer(rf"<!-- {kind}: (\S+) (\S+) -->\n```\w*\n(.*?)\n```\n", DOC.read_text(), re.DOTALL):
        found[m.group(1)] = (m.group(2), m.group(3) + "\n")
    return found


def example(name: str, tmp_path: Path) -> ModuleType:
    """The page's module ``name``, written to ``tmp_path`` under its file name and imported."""
    path, code = _marked("example")[name]
    file = tmp_path / Path(path).name
    file.write_text(code)
    spec = importlib.util.spec_from_file_location(f"extending_{name}", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _layers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("layers_rule", ROOT / "tests" / "test_layers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_example_is_on_the_page_and_keeps_to_its_layer():
    """Four modules, each importing only from its own package or below, as the module it would be in ``src/``."""
    rule = _layers()
    assert sorted(_marked("example")) == sorted(EXAMPLES)
    for name, (path, code) in _marked("example").items():
        assert path.startswith("src/nodecast/"), f"{name}: {path} is not a module of nodecast"
        assert not (ROOT / path).exists(), f"{path} exists: the page's examples are not in src/ (show another one)"
        home = ".".join(Path(path).relative_to("src").with_suffix("").parts)
        imported = {n.module for n in ast.walk(ast.parse(code)) if isinstance(n, ast.ImportFrom)}
        for target in sorted(m for m in imported if m and m.startswith("nodecast")):
            up = rule.level(target) > rule.level(home)
            sibling = rule.level(target) == rule.level(home) > 0 and rule.package(target) != rule.package(home)
            assert not (up or sibling), f"the {name} example ({home}) imports {target}, above or beside its layer"


@pytest.mark.parametrize("name", ["reader", "model", "scheduler"])
def test_registry_lines_fit_the_code(name):
    """The lines the page's diff keeps or replaces are in the registry's file, and the new line names the example."""
    path, diff = _marked("registry")[name]
    source = {line.strip() for line in (ROOT / path).read_text().splitlines()}
    kept = [line[1:].strip() for line in diff.splitlines() if line[:1] in " -" and line.strip() != "..."]
    assert kept and all(line in source for line in kept), f"{path} no longer has {set(kept) - source}"
    module = Path(_marked("example")[name][0]).stem
    assert any(line.startswith("+") and re.search(rf"\b{module}\b", line) for line in diff.splitlines())


# --- a trace reader ---------------------------------------------------------------------------------------------

def _register_reader(monkeypatch, tmp_path: Path) -> ModuleType:
    """The registry line: the example's READER in ``traces.formats.READERS``, just before the op tables'."""
    from nodecast.traces import formats, op_table

    reader = example("reader", tmp_path)
    at = formats.READERS.index(op_table.READER)
    monkeypatch.setattr(formats, "READERS", (*formats.READERS[:at], reader.READER, *formats.READERS[at:]))
    return reader


@pytest.mark.parametrize("source", [SAMPLE, "kineto_training-rank0_a100-80gb.json.gz"])
def test_reader_reads_back_what_convert_wrote(source, tmp_path, monkeypatch, request):
    from nodecast.traces.load import detect_format, load_trace
    from nodecast.traces.parquet import to_csv

    if not source.startswith("sample:"):
        source = str(request.getfixturevalue("shared_traces") / source)
    original = load_trace(source)
    csv = tmp_path / "run.csv"
    to_csv(original, csv)
    with pytest.raises(InputError, match="not read back"):  # what nodecast says without the new reader
        load_trace(csv)
    reader = _register_reader(monkeypatch, tmp_path)
    assert detect_format(csv) == reader.FORMAT
    back = load_trace(csv)
    for column, values in original.columns.items():
        assert np.array_equal(back[column], values, equal_nan=values.dtype.kind == "f"), column
        assert back[column].dtype == values.dtype, column
    assert back.names == original.names
    assert back.meta.gpus == {}  # lost in the CSV: the page says to give --from


@pytest.mark.shared
def test_reader_claims_only_its_own_header(shared_traces, tmp_path, monkeypatch):
    from nodecast.traces.load import detect_format

    _register_reader(monkeypatch, tmp_path)
    assert detect_format(shared_traces / "nvprof-gputrace-csv_vectoradd_k40c.csv") == "nvprof-csv"


# --- a cost model -------------------------------------------------------------------------------------------------

@pytest.mark.shared
def test_model_scales_kernels_by_the_clock_ratio(shared_traces, tmp_path, monkeypatch, capsys):
    from nodecast.cli import main
    from nodecast.models import registry
    from nodecast.traces.kinds import OpKind

    model = example("model", tmp_path).ClockRatioModel
    assert model.name not in registry.model_names()
    builtin = registry._builtin
    # The registry line: one more entry of _builtin's tuple, after plain-roofline; the registry is filled afresh.
    monkeypatch.setattr(registry, "_builtin", lambda: tuple(
        f for old in builtin() for f in ((old, model) if old.name == "plain-roofline" else (old,))))
    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_builtin_loaded", False)
    trace = nodecast.load_trace(shared_traces / "nsys_openacc-kmeans_rtx3080.sqlite")
    proj = nodecast.project(trace, "h100-pcie-server", models=[model.name])
    time_s = proj.results[model.name].time_s
    kernels = trace["kind"] == OpKind.KERNEL
    assert kernels.any() and not kernels.all()
    ratio = proj.source.gpu.clock_hz / proj.target.gpu.clock_hz
    assert ratio != 1.0
    assert np.array_equal(time_s[kernels], trace.duration_ns[kernels] * 1e-9 * ratio)
    assert np.isnan(time_s[~kernels]).all()
    assert registry.model_names("kernel").index(model.name) == registry.model_names("kernel").index("plain-roofline") + 1
    assert registry.default_models("kernel") == ["default-kernel"]  # a baseline joins no default chain
    assert main(["models"]) == 0
    assert re.search(rf"^\W*{model.name}\s.*\bkernel\b.*\byes\b", capsys.readouterr().out, re.MULTILINE)


# --- a scheduler --------------------------------------------------------------------------------------------------

@pytest.mark.shared
def test_scheduler_pops_the_highest_priority_first(starpu_data, tmp_path, monkeypatch, capsys):
    from nodecast.cli import main
    from nodecast.runtime.schedulers import SCHEDULERS

    prio = example("scheduler", tmp_path).Prio
    popped: list[tuple[int, bool]] = []  # (task, whether an older queued task was passed over)

    class Watched(prio):
        """The page's policy, watched from outside: which tasks are queued, in push order, at each pop."""

        def __init__(self, view) -> None:
            super().__init__(view)
            self.queued: list[int] = []

        def push(self, t: int) -> None:
            self.queued.append(t)  # first: a push may wake a worker that pops at once
            super().push(t)

        def pop(self, w) -> int:
            before = list(self.queued)
            t = super().pop(w)
            if t >= 0:
                priority = self.view.task_priority
                top = max(priority[q] for q in before)
                assert priority[t] == top, f"popped task {t} of priority {priority[t]}; {top} was queued"
                assert t == next(q for q in before if priority[q] == top), "not the oldest of its priority"
                popped.append((t, t != before[0]))
                self.queued.remove(t)
            return t

    setup = nodecast.SimSetup(starpu_dir=starpu_data / "sampling", starpu_machine="attila")
    monkeypatch.setitem(SCHEDULERS, "prio", Watched)
    run = nodecast.simulate("cholesky", 4800, scheduler="prio", setup=setup, trace=True)
    assert run.scheduler == "prio" and run.n_tasks == 35 == len(run.trace["tasks"])
    assert sorted(t for t, _ in popped) == list(range(run.n_tasks))
    assert any(overtook for _, overtook in popped), "no pop passed over an older task: a FIFO would pass this test"
    monkeypatch.setitem(SCHEDULERS, "prio", prio)  # the page's line
    eager = nodecast.simulate("cholesky", 4800, scheduler="eager", setup=setup)
    assert nodecast.simulate("cholesky", 4800, scheduler="prio", setup=setup).makespan_s < eager.makespan_s
    with pytest.raises(SystemExit) as done:
        main(["simulate", "--help"])
    assert done.value.code == 0
    assert re.search(r"\beager\b.*\bprio\b", " ".join(capsys.readouterr().out.split()))


# --- a report section ---------------------------------------------------------------------------------------------

def _rows(text: str) -> list[list[str]]:
    """The cells of every table row a rich console printed."""
    return [[cell.strip() for cell in line.split("│")[1:-1]] for line in text.splitlines() if line.startswith("│")]


@pytest.mark.parametrize("source", [SAMPLE, "nvprof_ahead-lammps_summit-v100.nvvp"])
def test_report_section_is_found_by_its_file(source, tmp_path, monkeypatch, request):
    """The page's module, put in a folder of the ``report.terminal`` package (as its own file would be), is found
    there by the first ``render`` call; the tables hold what the trace holds, computed here with pandas."""
    from nodecast.report import terminal
    from nodecast.report._dispatch import Dispatch
    from nodecast.units import fmt_int, fmt_seconds, fmt_share

    if not source.startswith("sample:"):
        source = str(request.getfixturevalue("shared_traces") / source)
    path, code = _marked("example")["report"]
    assert path.startswith("src/nodecast/report/terminal/") and "@render.register(Trace)" in code
    folder = tmp_path / "terminal"
    folder.mkdir()
    (folder / Path(path).name).write_text(code)
    name = f"nodecast.report.terminal.{Path(path).stem}"
    request.addfinalizer(lambda: sys.modules.pop(name, None))
    monkeypatch.setattr(terminal, "__path__", [*terminal.__path__, str(folder)])
    # A fresh dispatcher for this test: the module registers with it, the real one never sees it.
    monkeypatch.setattr(terminal, "render", Dispatch(terminal.__name__, "render", "terminal renderer"))
    trace = nodecast.load_trace(source)
    out = io.StringIO()
    terminal.render(trace, Console(file=out, width=200, color_system=None), top=10)
    text = out.getvalue()
    assert name in sys.modules

    ops = trace.to_pandas()
    ops["s"] = (ops["end_ns"] - ops["start_ns"]) * 1e-9
    work = ops.loc[ops["kind"] != "sync", "s"].sum()
    per_kind = ops.groupby("kind", observed=True)["s"].agg(["size", "sum"])
    expected = [[k, fmt_int(r["size"]), "—" if k == "sync" else fmt_seconds(r["sum"]),
                 "—" if k == "sync" else fmt_share(r["sum"] / work)] for k, r in per_kind.iterrows()]
    assert all(gpu in text for gpu in trace.meta.gpus.values())
    kernels = ops[ops["kind"] == "kernel"]
    if kernels.empty:
        assert _rows(text) == expected and "No kernels in this trace." in text
        return
    named = kernels.groupby("name")["s"].agg(["size", "sum", "mean"]).sort_values("sum", ascending=False)
    expected += [[k, fmt_int(r["size"]), fmt_seconds(r["sum"]), fmt_seconds(r["mean"]),
                  fmt_share(r["sum"] / kernels["s"].sum())] for k, r in named.head(10).iterrows()]
    assert _rows(text) == expected
    assert f"Top 10 of {len(named)} kernels" in text
