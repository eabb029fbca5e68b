"""What a model is, and the registry that lets new ones plug in.

A model is a named object that, given a Trace, the source Machine (where the
trace was recorded) and the target Machine, returns projected GPU times for
the ops it accepts (AHEAD's Filter + Estimator). The projector never names a
model: it asks the registry for all of them (or those the user chose), so a
new model registers itself and is used without touching the projector.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

import numpy as np

from nodecast.errors import InputError

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


_REGISTRY: dict[str, Callable[[], Model]] = {}


def register(factory: Callable[[], Model]) -> Callable[[], Model]:
    """Class decorator: make a model (a zero-argument factory) known by its ``name``."""
    name = factory.name  # type: ignore[attr-defined]
    if name in _REGISTRY:
        msg = f"a model named {name!r} is already registered"
        raise ValueError(msg)
    _REGISTRY[name] = factory
    return factory


def _load_builtin_models() -> None:
    # Importing the modules runs their @register decorators.
    import nodecast.models.baselines  # noqa: F401
    import nodecast.models.kernel_baselines  # noqa: F401
    import nodecast.models.kernel_default  # noqa: F401
    import nodecast.models.kernel_learned  # noqa: F401
    import nodecast.models.kernel_wave  # noqa: F401
    import nodecast.models.roofline  # noqa: F401
    import nodecast.models.scaled  # noqa: F401
    import nodecast.models.transfer  # noqa: F401


#: The model each kind of op gets when the caller names none (``default_model``). The source run is the
#: calibration by default: each op's time on B is its time measured on A times the model's ratio B/A, so that
#: what B does not change keeps its measured time and ``--from X --to X`` gives A's times back. Copies:
#: ``ahead-scaled`` (``nodecast.models.scaled``: measured time x ahead(B) / ahead(A)); kernels: roofline where
#: Nsight Compute metrics exist, wave scaling elsewhere, both as ratios on the measured time
#: (``nodecast.models.kernel_default``). The absolute models (``ahead``: data sheets alone) serve where nothing
#: was measured (``curves``, ``simulate``) and stay selectable (``--models ahead``).
DEFAULT_MODELS: dict[str, str] = {"transfer": "ahead-scaled", "kernel": "default-kernel"}


def is_absolute(model: Model) -> bool:
    """Whether ``model`` predicts an op's time from the machines alone (``absolute = True``: ``ahead``, the
    bandwidth baselines), rather than as the time measured on the source times its ratio B/A (every model
    without the attribute: the source-scaled copies, the kernel models). Reports say which ops moved by a ratio
    and which an absolute model set."""
    return bool(getattr(model, "absolute", False))


def default_model(kind: str) -> Model:
    """A fresh instance of the default model of ``kind`` (``DEFAULT_MODELS``); InputError for a kind without one."""
    if kind not in DEFAULT_MODELS:
        msg = f"no default model for {kind!r} ops"
        raise InputError(msg, key="kind", hint=f"Kinds with a default: {', '.join(DEFAULT_MODELS)}")
    return get_models([DEFAULT_MODELS[kind]])[0]


def model_names(kind: str | None = None) -> list[str]:
    """Names of the registered models (of one kind), in registration order."""
    _load_builtin_models()
    return [n for n, f in _REGISTRY.items() if kind is None or f.kind == kind]  # type: ignore[attr-defined]


def get_models(names: list[str] | None = None, kind: str | None = None) -> list[Model]:
    """Instances of the named models (all of ``kind`` when ``names`` is None)."""
    _load_builtin_models()
    if names is None:
        names = model_names(kind)
    out = []
    for name in names:
        if name not in _REGISTRY:
            msg = f"unknown model {name!r}"
            raise InputError(msg, key="--models", hint=f"Known: {', '.join(model_names())}")
        out.append(_REGISTRY[name]())
    return out
