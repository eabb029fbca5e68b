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
