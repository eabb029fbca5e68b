"""The platform and kernel models a simulation runs on, from what a user names.

``nodecast simulate`` only parses its options into a ``SimSetup`` and calls
``platform_and_models``; the same works from Python::

    from pathlib import Path
    from nodecast.runtime import RuntimeOptions, Simulation, cholesky
    from nodecast.runtime.setup import SimSetup, platform_and_models

    setup = SimSetup(starpu_dir=Path("../shared/data/starpu/sampling"), starpu_machine="attila", gpus=2)
    plat, models = platform_and_models(setup)
    result = Simulation(cholesky(9600), plat, models, RuntimeOptions(scheduler="dmda")).run()

Where the platform comes from, first found: a SimGrid platform file
(``platform_file``), a nodecast machine (``machine``: catalogue name or TOML;
``Platform.from_machine``, AHEAD's link model), or StarPU's calibration
folder (``starpu_dir``/bus/``starpu_machine``.platform[.v4].xml). The kernel
models are the registry's task-kernel chain that ``nodecast.cost.tasks``
assembles (StarPU's models, fixed times, samples, roofline times).

Errors name the ``nodecast simulate`` option that carries the value (the
InputError's ``key``), as everywhere in nodecast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nodecast import paths
from nodecast.cost.tasks import STARPU_DIR_ENV, SimSetup, kernel_models, load_node, starpu_dir
from nodecast.engine.platform import Platform
from nodecast.errors import InputError

__all__ = [
    "STARPU_DIR_ENV",
    "SimSetup",
    "foreign_models_note",
    "machines_there",
    "platform_and_models",
    "platform_node",
    "starpu_dir",
    "starpu_platform_file",
]


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


def platform_node(setup: SimSetup) -> Any:
    """The nodecast Machine the platform is built from (``machine`` without ``platform_file``), else None."""
    return load_node(setup.machine) if setup.machine is not None and setup.platform_file is None else None


def platform_and_models(setup: SimSetup, machine: str | None = None) -> tuple[Platform, Any]:
    """(Platform, KernelModels) that ``setup`` describes; ``machine`` replaces ``setup.starpu_machine``."""
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
    models = kernel_models(setup, machine or plat.name, node)
    if node is not None and folder is not None and machine is not None and models.scale is None:
        plat.notes.append(foreign_models_note(folder, machine, node))
    return plat, models


def foreign_models_note(folder: Path, machine: str, node: Any) -> str:
    """Say that StarPU's kernel times of ``machine`` run unchanged on ``node``'s (probably other) GPUs."""
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
