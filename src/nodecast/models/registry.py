"""The model registry: the built-in models, those a user adds, and the chain policy.

The projector never names a model: it asks the registry for all of them (or
those the user chose). The chain policy says which model answers each op
first and what falls back to what. Per kind of model ("transfer",
"kernel"), a *chain* of models is tried in order and the first that handles
an op gives its time (``nodecast.cost.ops.costs`` applies it):

* ``--models`` given: the named models, in the given order;
* else the registry's choice: ``default_model(kind)`` for a kind the
  registry names a default for (``DEFAULT_MODELS``: the source run as
  calibration, each op's time on A x the model's ratio B/A; copies:
  ``ahead-scaled``; kernels: ``default-kernel``, the roofline where Nsight
  Compute metrics (``--metrics``) exist and wave scaling elsewhere), else
  every registered model of that kind that is not a baseline, in
  registration order.

Ops no model of their chain handles keep their measured source time.

The simulator's kernel times come from here too: the models of the kinds in
``TASK_KINDS`` (``"task-kernel"``: StarPU's history-based perfmodels, the
roofline for kernels without one, the roofline ratio between two GPUs;
``nodecast.models.task_kernel``) answer a task's query, not a trace's ops. They
are known only where their kind is asked for: ``model_names()``,
``model_chains`` and a trace's ``--models`` leave them out, ``all_models``
(``nodecast models``) lists them, and the simulator's chain is
``default_models("task-kernel")``.

Adding a model: a module that defines it (a ``nodecast.models.base.Model``)
and one line in ``_builtin``; a model from outside the package is added with
``register``.
"""

from __future__ import annotations

from collections.abc import Callable

from nodecast.errors import InputError
from nodecast.models.base import Model
from nodecast.models.task_kernel import TASK_KERNEL

_REGISTRY: dict[str, Callable[[], Model]] = {}
#: Whether the built-in models are in ``_REGISTRY`` (they are registered on first use, before any other).
_builtin_loaded = False
#: Kinds of model that answer the simulator's per-task queries, not a trace's ops (see the module docstring).
TASK_KINDS = (TASK_KERNEL,)


def _builtin() -> tuple[Callable[[], Model], ...]:
    """The built-in models, one line each, in the order ``nodecast models`` lists them and every model list follows.

    Imported on first use, not with the registry: the models pull in pandas and the data sheets, which the
    commands that project nothing do without.
    """
    from nodecast.models import (baselines, kernel_baselines, kernel_default, kernel_learned, kernel_wave, roofline,
                                 scaled, transfer)
    from nodecast.models import collective
    from nodecast.models import history, task_roofline

    return (
        transfer.AheadModel,
        transfer.AheadNoLatencyModel,
        transfer.AheadEq9Model,
        baselines.PeakBandwidthModel,
        baselines.BackOfEnvelopeModel,
        collective.NcclModel,  # before the kernel models: a collective is a kernel, and its own chain answers first
        collective.NcclScaledModel,
        roofline.RooflineModel,
        kernel_baselines.DramRatioModel,
        kernel_baselines.FlopsRatioModel,
        kernel_baselines.PlainRooflineModel,
        kernel_learned.LearnedKernelModel,
        kernel_wave.WaveScalingModel,
        kernel_default.DefaultKernelModel,
        scaled.AheadScaledModel,
        scaled.PeakBandwidthScaledModel,
        history.StarpuHistoryModel,
        task_roofline.RooflineMissingModel,
        task_roofline.RooflineRatioModel,
    )


def _add(factory: Callable[[], Model]) -> None:
    """Put ``factory`` in the registry under its ``name``; ValueError when the name is taken (never replaced
    silently: a model named twice would answer for the other one)."""
    name = factory.name  # type: ignore[attr-defined]
    if name in _REGISTRY:
        msg = f"a model named {name!r} is already registered"
        raise ValueError(msg)
    _REGISTRY[name] = factory


def _load_builtin_models() -> None:
    """Register the built-in models, once, so that they come first and in ``_builtin``'s order."""
    global _builtin_loaded
    if _builtin_loaded:
        return
    for factory in _builtin():
        _add(factory)
    _builtin_loaded = True


def register(factory: Callable[[], Model]) -> Callable[[], Model]:
    """Make a model (a zero-argument factory, such as its class) known by its ``name``, after the built-in ones.

    Usable as a class decorator; ValueError when a model of that name is already registered.
    """
    _load_builtin_models()
    _add(factory)
    return factory


#: The model each kind of op gets when the caller names none (``default_model``). The source run is the
#: calibration by default: each op's time on B is its time measured on A times the model's ratio B/A, so that
#: what B does not change keeps its measured time and ``--from X --to X`` gives A's times back. Copies:
#: ``ahead-scaled`` (``nodecast.models.scaled``: measured time x ahead(B) / ahead(A)); kernels: roofline where
#: Nsight Compute metrics exist, wave scaling elsewhere, both as ratios on the measured time
#: (``nodecast.models.kernel_default``). The absolute models (``ahead``: data sheets alone) serve where nothing
#: was measured (``curves``, ``simulate``) and stay selectable (``--models ahead``). Collectives (NCCL kernels):
#: ``nccl-scaled``, measured time x NCCL's model on B / on A (``nodecast.models.collective``).
DEFAULT_MODELS: dict[str, str] = {"transfer": "ahead-scaled", "kernel": "default-kernel", "collective": "nccl-scaled"}


def default_model(kind: str) -> Model:
    """A fresh instance of the default model of ``kind`` (``DEFAULT_MODELS``); InputError for a kind without one."""
    if kind not in DEFAULT_MODELS:
        msg = f"no default model for {kind!r} ops"
        raise InputError(msg, key="kind", hint=f"Kinds with a default: {', '.join(DEFAULT_MODELS)}")
    return get_models([DEFAULT_MODELS[kind]])[0]


def model_names(kind: str | None = None) -> list[str]:
    """Names of the registered models of ``kind`` (None: of every kind but ``TASK_KINDS``), in registration order."""
    _load_builtin_models()
    return [n for n, f in _REGISTRY.items()
            if (f.kind == kind if kind is not None else f.kind not in TASK_KINDS)]  # type: ignore[attr-defined]


def get_models(names: list[str] | None = None, kind: str | None = None) -> list[Model]:
    """Instances of the named models (all of ``kind`` when ``names`` is None); a name must be one of
    ``model_names()``, or of ``model_names(kind)`` for a kind of ``TASK_KINDS`` (a trace cannot name those)."""
    _load_builtin_models()
    if names is None:
        names = model_names(kind)
    known = model_names(kind) if kind in TASK_KINDS else model_names()
    out = []
    for name in names:
        if name not in known:
            msg = f"unknown model {name!r}"
            raise InputError(msg, key="--models", hint=f"Known: {', '.join(known)}")
        out.append(_REGISTRY[name]())
    return out


def all_models() -> list[Model]:
    """An instance of every registered model, the simulator's (``TASK_KINDS``) too, in registration order."""
    _load_builtin_models()
    return [factory() for factory in _REGISTRY.values()]


def default_models(kind: str) -> list[str]:
    """The registry's model chain for ``kind`` (see the module docstring)."""
    if kind in DEFAULT_MODELS:
        return [default_model(kind).name]
    return [m.name for m in get_models(model_names(kind), kind) if not m.baseline]


def model_chains(names: tuple[str, ...] | None) -> dict[str, list[str]]:
    """Kind -> the models tried in order for ops of that kind: those ``names`` gives (None: ``default_models``)."""
    kinds = list(dict.fromkeys(m.kind for m in get_models(model_names())))
    if names is None:
        return {kind: default_models(kind) for kind in kinds}
    chosen = get_models(list(names))  # unknown names: InputError with the known list
    return {kind: [m.name for m in chosen if m.kind == kind] for kind in kinds}
