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
    assert json.loads(out) == [factory.name for factory in registry._builtin()]
    assert json.loads(out)[:3] == ["ahead", "ahead-no-latency", "ahead-eq9"]


def test_every_builtin_model_follows_the_protocol_under_a_unique_name():
    """Each built-in factory makes a Model of a known kind; no two share a name."""
    models = registry.get_models()
    assert [m.name for m in models] == registry.model_names()
    assert len(set(registry.model_names())) == len(models)
    assert all(isinstance(m, Model) and m.kind in ("transfer", "kernel") for m in models)


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
    assert registry.model_names() == [f.name for f in registry._builtin()] + ["test-extra"]
    with pytest.raises(ValueError, match="'test-extra' is already registered"):
        registry.register(_Extra)


def test_chains_per_kind():
    """No names: the default of each kind; names: grouped by kind in the order given (every kind present, empty
    when none was named); an unknown name lists the known ones."""
    assert registry.model_chains(None) == {"transfer": ["ahead-scaled"], "kernel": ["default-kernel"]}
    assert registry.model_chains(("roofline", "ahead-eq9", "ahead")) == {"transfer": ["ahead-eq9", "ahead"],
                                                                         "kernel": ["roofline"]}
    assert registry.model_chains(("ahead",)) == {"transfer": ["ahead"], "kernel": []}
    with pytest.raises(InputError, match="unknown model 'nope'"):
        registry.model_chains(("nope",))
