"""The platform and kernel models a simulation runs on, from what a user names.

``nodecast simulate`` only parses its options into a ``SimSetup`` and calls
``platform_and_models``; the same works from Python::

    from pathlib import Path
    from nodecast.sim import RuntimeOptions, Simulation, cholesky
    from nodecast.cost.tasks import SimSetup, platform_and_models

    setup = SimSetup(starpu_dir=Path("../shared/data/starpu/sampling"), starpu_machine="attila", gpus=2)
    plat, models = platform_and_models(setup)
    result = Simulation(cholesky(9600), plat, models, RuntimeOptions(scheduler="dmda")).run()

Where the platform comes from, first found: a SimGrid platform file
(``platform_file``), a nodecast machine (``machine``: catalogue name or TOML;
``Platform.from_machine``, AHEAD's link model), or StarPU's calibration
folder (``starpu_dir``/bus/``starpu_machine``.platform[.v4].xml). Kernel
durations: StarPU's history and regression models of ``starpu_machine``
(``starpu_dir``/codelets/45), fixed times per kernel, per-execution samples,
and for kernels without a model, roofline times of the simulated GPU
(``roofline_missing``) or StarPU's times scaled by the roofline ratio of two
GPUs (``kernels_measured_on``).

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


def starpu_platform_file(folder: Path, machine: str) -> Path | None:
    """``bus/<machine>.platform.v4.xml`` (the newer SimGrid dialect) or ``.platform.xml`` in StarPU's folder, None
    if neither."""
    for name in (f"{machine}.platform.v4.xml", f"{machine}.platform.xml"):
        xml = folder / "bus" / name
        if paths.stat_quietly(xml) is not None:  # a machine name too long for a file has no platform file
            return xml
    return None


def machines_there(folder: Path) -> str:
    """The machines with a platform file in ``folder/bus``, comma-separated ("none" when there is none)."""
    names = sorted({p.name.split(".platform")[0] for p in (folder / "bus").glob("*.platform*.xml")})
    return ", ".join(names) or "none"


def load_node(name: str) -> Any:
    """A nodecast Machine from a catalogue name or a TOML file."""
    from nodecast.machines import load_machine, load_machine_file

    return load_machine_file(name) if name.endswith(".toml") else load_machine(name)


def platform_node(setup: SimSetup) -> Any:
    """The nodecast Machine the platform is built from (``machine`` without ``platform_file``), else None."""
    return load_node(setup.machine) if setup.machine is not None and setup.platform_file is None else None


def platform_and_models(setup: SimSetup, machine: str | None = None) -> tuple[Any, Any]:
    """(Platform, KernelModels) that ``setup`` describes; ``machine`` replaces ``setup.starpu_machine``."""
    from nodecast.models.history import KernelModels, load_samples_csv
    from nodecast.engine.platform import Platform

    folder = starpu_dir(setup)
    machine = machine or setup.starpu_machine
    node = None  # the nodecast Machine behind the platform, when there is one
    if setup.platform_file is not None:
        plat = Platform.from_starpu(setup.platform_file)
        machine = machine or plat.name
    elif setup.machine is not None:
        node = load_node(setup.machine)
        plat = Platform.from_machine(node)
    else:
        if folder is None or machine is None:
            raise InputError(
                "no platform given",
                key="--starpu-dir",
                hint="Give --starpu-dir and --starpu-machine (e.g. attila), --platform FILE or --machine NAME",
            )
        xml = starpu_platform_file(folder, machine)
        if xml is None:
            raise InputError(f"no platform file for machine {machine!r}", path=folder / "bus", key="--starpu-machine",
                             hint=f"Machines there: {machines_there(folder)}")
        plat = Platform.from_starpu(xml)
    if setup.gpus is not None:
        plat = plat.with_gpu_count(setup.gpus)
    if setup.gpu_memory_bytes is not None:
        plat = plat.with_gpu_memory(setup.gpu_memory_bytes)
    if setup.bandwidth_scale is not None:
        plat = plat.with_bandwidth_scale(setup.bandwidth_scale, setup.bandwidth_links)
    fixed = dict(setup.kernel_times_s)
    provider = (lambda q: fixed.get(q.kernel)) if fixed else None
    samples = load_samples_csv(setup.samples) if setup.samples else None
    codelets = folder / "codelets" / "45" if folder is not None else None
    fallback, scale = roofline_hooks(setup, node)
    models = KernelModels(
        codelets,
        machine or plat.name,
        provider=provider,
        fallback=fallback,
        scale=scale,
        mode=setup.kernel_time_mode,
        seed=setup.seed,
        samples=samples,
    )
    if node is not None and codelets is not None and machine is not None and scale is None:
        plat.notes.append(foreign_models_note(folder, machine, node))  # type: ignore[arg-type]
    return plat, models


def foreign_models_note(folder: Path, machine: str, node: Any) -> str:
    """Say that StarPU's kernel times of ``machine`` run unchanged on ``node``'s (probably other) GPUs."""
    from nodecast.engine.platform import Platform

    measured_on = ""
    xml = starpu_platform_file(folder, machine)
    if xml is not None:
        try:
            models = list(dict.fromkeys(Platform.from_starpu(xml).gpu_models))
        except InputError:
            models = []
        if models:  # a platform file that lists no GPU names none: no empty "()"
            measured_on = f" ({', '.join(models)})"
    return (
        f"kernel durations are StarPU's measurements on {machine!r}{measured_on}, used unchanged on "
        f"{node.name}'s {node.gpu.model}; leave out --starpu-dir and add --roofline-missing for roofline times of "
        "that GPU"
    )


def roofline_hooks(setup: SimSetup, node: Any) -> tuple[Any, Any]:
    """The kernel-time fallback of ``roofline_missing`` and the scale of ``kernels_measured_on`` (None when not
    asked); ``node``: the Machine the platform was built from, if any."""
    wanted = [opt for opt, on in (("--roofline-missing", setup.roofline_missing),
                                  ("--kernels-measured-on", setup.kernels_measured_on)) if on]
    if setup.roofline_gpu is not None and not wanted:
        raise InputError("--roofline-gpu only matters with --roofline-missing or --kernels-measured-on",
                         key="--roofline-gpu")
    if not wanted:
        return None, None
    from nodecast.models.roofline import gpu_figures
    from nodecast.cost.task_roofline import RooflineKernelTimes, RooflineRatio

    if setup.roofline_gpu is not None:
        node = load_node(setup.roofline_gpu)
    if node is None:
        raise InputError(
            f"{' and '.join(wanted)} needs the simulated GPU's peaks",
            key="--roofline-gpu",
            hint="Give --roofline-gpu MACHINE (catalogue name or TOML), or build the platform with --machine",
        )
    target = gpu_figures(node)
    fallback = RooflineKernelTimes(target, setup.precision) if setup.roofline_missing else None
    scale = None
    if setup.kernels_measured_on:
        source = gpu_figures(load_node(setup.kernels_measured_on))
        scale = RooflineRatio(source, target, setup.precision)
    return fallback, scale
