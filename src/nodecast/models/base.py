"""What a model is: the vocabulary every projection model speaks.

A model is a named object that, given a Trace, the source Machine (where the
trace was recorded) and the target Machine, returns projected GPU times for
the ops it accepts (AHEAD's Filter + Estimator): the ``Model`` protocol, and
its answer, a ``ModelResult``. Every model module imports this one and
nothing above it; the registry (``nodecast.models.registry``) lists the
built-in models and says which answers each op first, so the projector never
names a model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine
    from nodecast.traces.trace import Trace


@dataclass
class ModelResult:
    """Projected GPU times of one model over a whole trace.

    ``time_s[i]`` is the projected GPU time of op ``i`` in seconds, NaN where
    the model does not handle the op. ``low_s``/``high_s`` bound it where the
    method gives an interval (the roofline model), else they are None.
    ``notes`` say what the model assumed (which 1-byte cost it used...).
    """

    model: str
    time_s: np.ndarray
    low_s: np.ndarray | None = None
    high_s: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def handled(self) -> np.ndarray:
        """Boolean mask of the ops this model projected."""
        return ~np.isnan(self.time_s)


@runtime_checkable
class Model(Protocol):
    """The interface every projection model implements.

    ``name`` is a stable lower-case key used on the command line and as a
    column name (``time_s[<name>]``); ``kind`` groups models ("transfer",
    "kernel"); ``baseline`` marks the simple reference models a method must beat.
    """

    name: ClassVar[str]
    kind: ClassVar[str]
    baseline: ClassVar[bool]
    description: ClassVar[str]

    def accepts(self, trace: Trace) -> np.ndarray:
        """Boolean mask of the ops this model can project."""
        ...

    def project(self, trace: Trace, source: Machine, target: Machine) -> ModelResult:
        """Projected times on ``target`` of the ops of ``trace`` recorded on ``source``."""
        ...


def is_absolute(model: Model) -> bool:
    """Whether ``model`` predicts an op's time from the machines alone (``absolute = True``: ``ahead``, the
    bandwidth baselines), rather than as the time measured on the source times its ratio B/A (every model
    without the attribute: the source-scaled copies, the kernel models). Reports say which ops moved by a ratio
    and which an absolute model set."""
    return bool(getattr(model, "absolute", False))
