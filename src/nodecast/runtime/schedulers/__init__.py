"""Scheduling policies with StarPU 1.4's semantics (Stanisic et al., sections 1 and 8), one file per policy.

``eager`` (``eager.py``), ``random`` (``random_policy.py``), ``ws``/``lws``
(``work_stealing.py``), ``dmda``/``dmdar``/``dmdas`` (``dmda.py``), ``heft``
(``heft.py``); each file's docstring says what its policy does. A policy
sees the runtime only through a ``SchedulerView`` (``base.py``).

``SCHEDULERS`` is the registry, name -> policy class, in the order the
command's help lists them; ``nodecast simulate``, sweeps and the reference
comparison read their names from it. Adding a scheduler is one new file
(a ``Scheduler`` subclass) and one line here.
"""

from __future__ import annotations

from nodecast.errors import InputError
from nodecast.runtime.schedulers.base import PerWorkerFifo, Scheduler, SchedulerView
from nodecast.runtime.schedulers.dmda import Dmda, Dmdar, Dmdas
from nodecast.runtime.schedulers.eager import Eager
from nodecast.runtime.schedulers.heft import Heft
from nodecast.runtime.schedulers.random_policy import RandomPolicy
from nodecast.runtime.schedulers.work_stealing import WorkStealing

__all__ = ["SCHEDULERS", "PerWorkerFifo", "Scheduler", "SchedulerView", "make_scheduler"]

#: The registry: scheduler name -> policy class.
SCHEDULERS: dict[str, type[Scheduler]] = {
    "eager": Eager,
    "random": RandomPolicy,
    "ws": WorkStealing,
    "lws": WorkStealing,
    "dmda": Dmda,
    "dmdar": Dmdar,
    "dmdas": Dmdas,
    "heft": Heft,
}


def make_scheduler(name: str, view: SchedulerView) -> Scheduler:
    """The policy called ``name``, seeing the runtime through ``view``. Raises InputError for an unknown name."""
    try:
        cls = SCHEDULERS[name]
    except KeyError:
        raise InputError(f"unknown scheduler {name!r}", key="--scheduler", hint=f"Choose one of {', '.join(SCHEDULERS)}") from None
    return cls(view)
