"""``nodecast.models.registry``: the built-in models in one fixed order, models added after them, the chain policy."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from nodecast.errors import InputError
from nodecast.models import registry
from nodecast.models.base import Model


def test_order_does_not_depend_on_which_model_was_imported_first():
    """The registry lists the built-in models in its own order, whatever the program imported first (models used
    to register as their modules were imported, so importing wave scaling first put it ahead of AHEAD)."""
    code = ("import json, nodecast.models.kernel_wave, nodecast.models.scaled\n"
            "from nodecast.models.registry import model_names\n"
            "print(json.dumps(model_names()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [f.name for f in registry._builtin() if f.kind not in registry.TASK_KINDS]
    assert json.loads(out)[:3] == ["ahead", "ahead-no-latency", "ahead-eq9"]


def test_every_builtin_model_follows_the_protocol_under_a_unique_name():
    """Each built-in factory makes a Model of a known kind; no two share a name."""
    models = registry.get_models()
    assert [m.name for m in models] == registry.model_names()
    assert len(set(registry.model_names())) == len(models)
    assert all(isinstance(m, Model) and m.kind in ("transfer", "kernel", "collective") for m in models)


class _Extra:
    name = "test-extra"
    kind = "kernel"
    baseline = True
    description = "test model"


def test_a_model_added_comes_after_the_builtin_ones_and_once(monkeypatch):
    """``register`` adds a model after the built-in ones (registered first, in their order); a second model of the
    same name is refused."""
    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_builtin_loaded", False)
    assert registry.register(_Extra) is _Extra
    assert registry.model_names() == [f.name for f in registry._builtin() if f.kind not in registry.TASK_KINDS] + [
        "test-extra"]
    with pytest.raises(ValueError, match="'test-extra' is already registered"):
        registry.register(_Extra)


def test_chains_per_kind():
    """No names: the default of each kind; names: grouped by kind in the order given (every kind present, empty
    when none was named); an unknown name lists the known ones."""
    assert registry.model_chains(None) == {"transfer": ["ahead-scaled"], "kernel": ["default-kernel"],
                                           "collective": ["nccl-scaled"]}
    assert registry.model_chains(("roofline", "ahead-eq9", "ahead")) == {"transfer": ["ahead-eq9", "ahead"],
                                                                         "kernel": ["roofline"], "collective": []}
    assert registry.model_chains(("ahead",)) == {"transfer": ["ahead"], "kernel": [], "collective": []}
    with pytest.raises(InputError, match="unknown model 'nope'"):
        registry.model_chains(("nope",))


def test_the_simulators_kernel_time_models_are_asked_for_by_their_kind(capsys):
    """The task-kernel models (StarPU's history, the roofline for kernels without one, the roofline ratio) are
    registered, each with a role and a description, and make the simulator's chain by the policy of kinds without a
    default; a trace's models, chains and --models know nothing of them; ``nodecast models`` lists them apart."""
    from nodecast.cli import main
    from nodecast.models.task_kernel import ROLES

    names = ["starpu-history", "roofline-missing", "roofline-ratio"]
    assert registry.model_names("task-kernel") == names == registry.default_models("task-kernel")
    models = registry.get_models(kind="task-kernel")
    assert [m.role for m in models] == ["history", "fallback", "scale"]
    assert all(m.role in ROLES and m.description and not m.baseline and callable(m.build) for m in models)
    assert not set(names) & set(registry.model_names())
    assert "task-kernel" not in registry.model_chains(None)
    with pytest.raises(InputError, match="unknown model 'starpu-history'"):
        registry.model_chains(("starpu-history",))
    assert [m.name for m in registry.all_models()] == [f.name for f in registry._builtin()]
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    trace_table, task_table = out.split("Simulator kernel-time models")
    assert all(n in task_table and n not in trace_table for n in names)
    assert "plain-roofline" in trace_table and "plain-roofline" not in task_table
