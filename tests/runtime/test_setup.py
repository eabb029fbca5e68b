"""Tests for nodecast.runtime.setup: the platform and kernel models a simulation runs on, without the CLI."""

from __future__ import annotations

import pytest

from nodecast.errors import InputError
from nodecast.graph.apps import cholesky
from nodecast.runtime.options import RuntimeOptions
from nodecast.runtime.setup import SimSetup, platform_and_models, platform_node
from nodecast.runtime.simulation import Simulation


def test_starpu_folder_gives_its_machine_with_the_gpus_asked_and_runs(starpu_data):
    """StarPU's calibration folder and machine name give that machine's platform and models, cut to 2 GPUs, and a
    simulation runs on them (the module docstring's example)."""
    setup = SimSetup(starpu_dir=starpu_data / "sampling", starpu_machine="attila", gpus=2)
    plat, models = platform_and_models(setup)
    assert len(plat.gpu_models) == 2
    assert platform_node(setup) is None
    result = Simulation(cholesky(9600), plat, models, RuntimeOptions(scheduler="dmda")).run()
    assert result.makespan_s > 0 and result.gflops > 0


def test_a_nodecast_machine_with_starpu_models_says_whose_kernel_times_they_are(starpu_data):
    """A catalogue machine builds the platform (AHEAD's link model); StarPU's kernel times of another machine run
    on it unchanged, and the platform's notes say so."""
    setup = SimSetup(starpu_dir=starpu_data / "sampling", starpu_machine="attila", machine="h100-sxm5-server")
    plat, _ = platform_and_models(setup)
    assert platform_node(setup).name == "h100-sxm5-server"
    assert any("StarPU's measurements on 'attila'" in note and "used unchanged" in note for note in plat.notes)


def test_whose_kernel_times_note_has_no_empty_parentheses_when_the_platform_names_no_gpu(tmp_path):
    """A StarPU platform file that lists no GPU: the note names the machine without an empty "()" after it."""
    from types import SimpleNamespace

    from nodecast.runtime.setup import foreign_models_note

    (tmp_path / "bus").mkdir()
    (tmp_path / "bus" / "cpuonly.platform.xml").write_text(
        '<platform version="4"><AS id="a" routing="Full"><host id="RAM" speed="1f"/></AS></platform>')
    node = SimpleNamespace(name="h100-sxm5-server", gpu=SimpleNamespace(model="H100"))
    note = foreign_models_note(tmp_path, "cpuonly", node)
    assert "()" not in note and note.startswith("kernel durations are StarPU's measurements on 'cpuonly', used")


def test_no_platform_is_one_error_naming_the_options(monkeypatch):
    """Nothing to build a platform from: an InputError that names --starpu-dir and the alternatives."""
    monkeypatch.delenv("NODECAST_STARPU_DIR", raising=False)
    with pytest.raises(InputError) as err:
        platform_and_models(SimSetup())
    assert err.value.key == "--starpu-dir" and "--machine" in err.value.message


def test_roofline_gpu_alone_is_refused():
    """A roofline GPU without --roofline-missing or --kernels-measured-on would be ignored: refused instead."""
    with pytest.raises(InputError) as err:
        platform_and_models(SimSetup(machine="h100-sxm5-server", roofline_gpu="a100-sxm4-40gb"))
    assert err.value.key == "--roofline-gpu"


class _OneMillisecond:
    """A task-kernel model as a user would add one: a fallback giving every kernel 1 ms."""

    name = "test-one-millisecond"
    kind = "task-kernel"
    baseline = False
    role = "fallback"
    description = "every kernel without a measurement: 1 ms"

    def build(self, request):
        def times(query):
            return 1e-3

        times.label = "1 ms per kernel (a test model)"
        return times


def test_the_simulators_kernel_times_come_from_the_registry(monkeypatch):
    """A task-kernel model registered with one registry line answers a simulation's kernels: without it a catalogue
    machine has no kernel times (the model error), with it every kernel takes its 1 ms and the notes say whose."""
    from nodecast.models import registry

    monkeypatch.delenv("NODECAST_STARPU_DIR", raising=False)
    setup = SimSetup(machine="h100-sxm5-server", gpus=1)
    plat, models = platform_and_models(setup)
    with pytest.raises(InputError, match="no performance model"):
        Simulation(cholesky(1920), plat, models)
    builtin = registry._builtin
    monkeypatch.setattr(registry, "_builtin", lambda: (*builtin(), _OneMillisecond))
    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_builtin_loaded", False)
    plat, models = platform_and_models(setup)
    result = Simulation(cholesky(1920), plat, models, RuntimeOptions(scheduler="eager")).run()
    assert result.n_tasks == 4 and "kernels without a model: 1 ms per kernel (a test model)" in result.notes
    assert models.expected_s("chol_model_gemm", "cuda", 0, 11059200) == 1e-3
