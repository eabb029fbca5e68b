"""Tests for nodecast.cost.tasks: the kernel models a simulation's tasks run with, without a platform."""

from __future__ import annotations

import pytest

from nodecast.cost.tasks import SimSetup, kernel_models
from nodecast.errors import InputError


def test_fixed_kernel_times_stand_without_starpu_models(monkeypatch):
    """Fixed times alone make kernel models: no StarPU folder and no platform are needed."""
    monkeypatch.delenv("NODECAST_STARPU_DIR", raising=False)
    models = kernel_models(SimSetup(kernel_times_s={"gemm": 2e-3}), "nowhere")
    assert models.folder is None and models.machine == "nowhere"
    assert models.expected_s("gemm", "cuda", 0, 1 << 20, None, 1e9) == 2e-3


def test_starpu_models_are_read_from_the_folder_named(starpu_data):
    """With StarPU's folder, the models are that machine's history-based models of codelets/45."""
    models = kernel_models(SimSetup(starpu_dir=starpu_data / "sampling"), "attila")
    assert models.folder == starpu_data / "sampling" / "codelets" / "45" and models.machine == "attila"


def test_roofline_gpu_alone_is_refused():
    """A roofline GPU without --roofline-missing or --kernels-measured-on would be ignored: refused instead."""
    with pytest.raises(InputError) as err:
        kernel_models(SimSetup(roofline_gpu="a100-sxm4-40gb"), "attila")
    assert err.value.key == "--roofline-gpu"


def _model(name, role, part):
    """A task-kernel model of ``role`` whose part is ``part`` (a registry entry as a user would add one)."""
    return type(name, (), {"name": name, "kind": "task-kernel", "baseline": False, "role": role,
                           "description": name, "build": lambda self, request: part})


def test_the_chain_asks_fallbacks_in_order_and_multiplies_scales(starpu_data, monkeypatch):
    """Several task-kernel fallbacks: the first that answers, in registration order; several scales: their product
    on StarPU's measured times; the notes name each."""
    from nodecast.models import registry

    def first(q):
        return 1e-3 if q.kernel == "mystery" else None

    def double(q):
        return 2.0

    first.label, double.label = "first", "x2"
    added = (_model("t-first", "fallback", first), _model("t-second", "fallback", lambda q: 5e-3),
             _model("t-double", "scale", double), _model("t-triple", "scale", lambda q: 3.0))
    plain = kernel_models(SimSetup(starpu_dir=starpu_data / "sampling"), "attila")
    builtin = registry._builtin
    monkeypatch.setattr(registry, "_builtin", lambda: (*builtin(), *added))
    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_builtin_loaded", False)
    models = kernel_models(SimSetup(starpu_dir=starpu_data / "sampling"), "attila")
    gemm = ("chol_model_gemm", "cuda", 0, 11059200)
    assert models.expected_s(*gemm) == plain.expected_s(*gemm) * 6.0
    assert models.expected_s("mystery", "cuda", 0, 4000) == 1e-3
    assert models.expected_s("other", "cuda", 0, 4000) == 5e-3
    assert "kernels without a model: first; else fallback times" in models.notes
    assert "kernel durations x2; then scaled" in models.notes
