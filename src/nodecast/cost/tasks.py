"""The kernel models a simulation's tasks run with, from what a user names.

Kernel durations: StarPU's history and regression models of the calibrated
machine (``starpu_dir``/codelets/45), fixed times per kernel
(``kernel_times_s``), per-execution samples, and for kernels without a model,
roofline times of the simulated GPU (``roofline_missing``) or StarPU's times
scaled by the roofline ratio of two GPUs (``kernels_measured_on``). Each is a
task-kernel model of the registry (``nodecast.models.task_kernel``): this
module turns the options into a ``TaskKernelRequest`` and assembles the chain
the registry gives (``default_models("task-kernel")``), naming no model.
``SimSetup`` holds what a user names for both the platform and the kernel
models; the platform, and ``platform_and_models`` that builds both, are in
``nodecast.runtime.setup``.

Errors name the ``nodecast simulate`` option that carries the value (the
InputError's ``key``), as everywhere in nodecast.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodecast import paths
from nodecast.errors import InputError

STARPU_DIR_ENV = "NODECAST_STARPU_DIR"


@dataclass(frozen=True)
class SimSetup:
    """What the platform and kernel models are built from (units: bytes, seconds)."""

    starpu_dir: Path | None = None  # StarPU's 'sampling' folder (bus/, codelets/45/); None: $NODECAST_STARPU_DIR
    starpu_machine: str | None = None  # the machine of StarPU's calibration files (e.g. "attila")
    platform_file: Path | None = None  # a StarPU *.platform.xml / *.platform.v4.xml
    machine: str | None = None  # a nodecast machine: catalogue name or TOML file
    gpus: int | None = None  # GPU count (fewer: drop the last ones; more: copies of existing ones)
    gpu_memory_bytes: float | None = None  # memory per GPU
    bandwidth_scale: float | None = None  # factor on link bandwidths
    bandwidth_links: str | None = None  # regular expression selecting the links to scale (None: all)
    kernel_times_s: Mapping[str, float] = field(default_factory=dict)  # fixed duration per kernel name
    kernel_time_mode: str = "mean"  # "mean", "normal" or "histogram" (StarPU's models)
    samples: Path | None = None  # per-execution samples CSV for "histogram"
    seed: int = 0
    precision: str = "single"  # "single" or "double": the roofline's peak
    roofline_missing: bool = False  # roofline times for kernels without a model
    kernels_measured_on: str | None = None  # machine StarPU measured the kernels on: scale by the roofline ratio
    roofline_gpu: str | None = None  # machine whose GPU peaks the two above use (default: ``machine``)


def starpu_dir(setup: SimSetup) -> Path | None:
    """The StarPU calibration folder: ``setup.starpu_dir``, else $NODECAST_STARPU_DIR, else None."""
    folder = setup.starpu_dir or (Path(os.environ[STARPU_DIR_ENV]) if os.environ.get(STARPU_DIR_ENV) else None)
    if folder is not None and not paths.is_dir(folder, "--starpu-dir"):
        what = "is a file, not a folder" if folder.exists() else "folder does not exist"
        raise InputError(what, path=folder, key="--starpu-dir",
                         hint="Give StarPU's sampling folder (with bus/ and codelets/45/)")
    return folder


def load_node(name: str) -> Any:
    """A nodecast Machine from a catalogue name or a TOML file."""
    from nodecast.machines import load_machine, load_machine_file

    return load_machine_file(name) if name.endswith(".toml") else load_machine(name)


def kernel_models(setup: SimSetup, machine: str, node: Any = None) -> Any:
    """The ``KernelModels`` that ``setup`` describes, with StarPU's models of ``machine`` (the StarPU calibration's
    machine name); ``node``: the nodecast Machine the platform was built from, if any (its GPU is the roofline's
    default)."""
    return task_kernel_chain(task_kernel_request(setup, machine, node))


def task_kernel_request(setup: SimSetup, machine: str, node: Any = None) -> Any:
    """The ``TaskKernelRequest`` of ``setup``: its files and options, and the simulated GPU's figures a roofline needs
    (those of ``roofline_gpu``, else of ``node``, the Machine the platform was built from), looked up only when asked
    for."""
    from nodecast.models.history import load_samples_csv
    from nodecast.models.task_kernel import TaskKernelRequest

    folder = starpu_dir(setup)
    fixed = dict(setup.kernel_times_s)
    provider = (lambda q: fixed.get(q.kernel)) if fixed else None
    samples = load_samples_csv(setup.samples) if setup.samples else None
    codelets = folder / "codelets" / "45" if folder is not None else None
    return TaskKernelRequest(machine, codelets, provider, setup.kernel_time_mode, setup.seed, samples, setup.precision,
                             setup.roofline_missing, roofline_target(setup, node), setup.kernels_measured_on)


def task_kernel_chain(request: Any) -> Any:
    """The simulator's kernel times for ``request``: the registry's task-kernel chain, each model's part by its role
    (``nodecast.models.task_kernel``): the first history model's ``KernelModels``, asking the fallbacks last (the
    first that answers) and scaling its measured times by the product of the scales."""
    from nodecast.models.registry import default_models, get_models
    from nodecast.models.task_kernel import ROLES, TASK_KERNEL

    chain: list[Any] = get_models(default_models(TASK_KERNEL), TASK_KERNEL)
    parts: dict[str, list[Any]] = {role: [] for role in ROLES}
    for model in chain:
        if model.role not in ROLES:
            msg = f"task-kernel model {model.name!r} has role {model.role!r}, not one of {ROLES}"
            raise ValueError(msg)
        if model.role != "history" and (part := model.build(request)) is not None:
            parts[model.role].append(part)
    fallback, scale = _first_answer(parts["fallback"]), _product(parts["scale"])
    for model in chain:  # built last: the history holds the fallback and the scale
        if model.role == "history" and (times := model.build(request, fallback, scale)) is not None:
            return times
    msg = "the registry has no task-kernel model of role 'history' to answer the simulator's queries"
    raise ValueError(msg)


def _first_answer(fallbacks: list[Any]) -> Any:
    """One fallback asking ``fallbacks`` in order (None for none; the only one itself, its ``label`` kept)."""
    if len(fallbacks) <= 1:
        return fallbacks[0] if fallbacks else None

    def first(query: Any) -> float | None:
        return next((t for t in (f(query) for f in fallbacks) if t is not None), None)

    first.label = "; else ".join(getattr(f, "label", "fallback times") for f in fallbacks)  # type: ignore[attr-defined]
    return first


def _product(scales: list[Any]) -> Any:
    """One scale multiplying ``scales`` (None for none; the only one itself, its ``label`` kept)."""
    if len(scales) <= 1:
        return scales[0] if scales else None

    def product(query: Any) -> float:
        factor = 1.0
        for s in scales:
            factor *= float(s(query))
        return factor

    product.label = "; then ".join(getattr(s, "label", "scaled") for s in scales)  # type: ignore[attr-defined]
    return product


def roofline_target(setup: SimSetup, node: Any) -> Any:
    """The GPU figures of the simulated GPU, for ``roofline_missing`` and ``kernels_measured_on`` (None when neither
    is asked for); ``node``: the Machine the platform was built from, if any."""
    wanted = [opt for opt, on in (("--roofline-missing", setup.roofline_missing),
                                  ("--kernels-measured-on", setup.kernels_measured_on)) if on]
    if setup.roofline_gpu is not None and not wanted:
        raise InputError("--roofline-gpu only matters with --roofline-missing or --kernels-measured-on",
                         key="--roofline-gpu")
    if not wanted:
        return None
    from nodecast.models.roofline_figures import gpu_figures

    if setup.roofline_gpu is not None:
        node = load_node(setup.roofline_gpu)
    if node is None:
        raise InputError(
            f"{' and '.join(wanted)} needs the simulated GPU's peaks",
            key="--roofline-gpu",
            hint="Give --roofline-gpu MACHINE (catalogue name or TOML), or build the platform with --machine",
        )
    return gpu_figures(node)
