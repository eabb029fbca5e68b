"""What a task-kernel model is: the vocabulary of the simulator's kernel times.

The simulator (``nodecast.runtime``) asks, per kind of task and worker, how long its kernel runs: a
``KernelQuery`` (kernel name, device, data size, FLOP) answered in seconds. The answers come from the models of
kind ``task-kernel`` in the registry (``nodecast.models.registry``), one chain per simulation, which
``nodecast.cost.tasks`` assembles from ``default_models("task-kernel")`` (every non-baseline model of the kind, in
registration order). Each model has a ``role`` in that chain:

``"history"``
    the measured times asked first: StarPU's history-based perfmodels (``starpu-history``,
    ``nodecast.models.history``). ``build(request, fallback, scale)`` gives the ``KernelModels`` the runtime
    queries, holding the chain's fallback and scale; the first history model that builds one is used.
``"fallback"``
    asked for a kernel no measurement covers (``roofline-missing``: the roofline bound on the simulated GPU).
    ``build(request)`` gives a ``KernelTimeProvider``; of several, the first that answers.
``"scale"``
    a factor on every measured time (``roofline-ratio``: measured on one GPU, scaled to another).
    ``build(request)`` gives ``query -> factor``; several multiply.

A model whose option the user did not give builds None and stays out of the chain. A part's ``label``, if any,
goes into the simulation's notes. Adding a task-kernel model: a module defining it and one line in the
registry's ``_builtin``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from nodecast.models.roofline_figures import GpuFigures

#: The kind of the simulator's kernel-time models in the registry.
TASK_KERNEL = "task-kernel"
#: The roles a task-kernel model plays in the simulator's chain (see the module docstring).
ROLES = ("history", "fallback", "scale")


@dataclass(frozen=True)
class KernelQuery:
    """What a kernel-time provider is asked: kernel name, device kind and id, data size, footprint, FLOPs."""

    kernel: str
    arch_kind: str
    devid: int
    size_bytes: int
    footprint: int | None
    flops: float


KernelTimeProvider = Callable[[KernelQuery], "float | None"]


@dataclass(frozen=True)
class TaskKernelRequest:
    """What a simulation asks its task-kernel models with: what the user named (units: seconds, bytes)."""

    machine: str  # the machine suffix of StarPU's model files (``attila``)
    codelets: Path | None = None  # StarPU's ``codelets/45`` folder; None: no history files
    fixed: KernelTimeProvider | None = None  # fixed times (``--kernel-time``), asked before StarPU's regression
    mode: str = "mean"  # "mean", "normal" or "histogram" (``--kernel-times``)
    seed: int = 0  # seed of the sampling generator
    samples: dict[tuple[str, str, int], list[float]] | None = None  # per-execution samples ("histogram")
    precision: str = "single"  # the precision whose peak a roofline takes (``--precision``)
    roofline_missing: bool = False  # roofline times for kernels without a measurement (``--roofline-missing``)
    target: GpuFigures | None = None  # maxima of the simulated GPU: given with roofline_missing or measured_on
    measured_on: str | None = None  # machine the history was measured on, name or TOML (``--kernels-measured-on``)


class TaskKernelModel(Protocol):
    """A registered task-kernel model: a name, ``kind`` ``"task-kernel"``, its ``role`` and what it does, and
    ``build``, which gives its part of one simulation's chain or None when the request does not ask for it."""

    name: ClassVar[str]
    kind: ClassVar[str]
    baseline: ClassVar[bool]
    role: ClassVar[str]
    description: ClassVar[str]

    def build(self, request: TaskKernelRequest, *hooks: Any) -> Any:
        """This model's part for ``request`` (see the roles), or None."""
        ...
