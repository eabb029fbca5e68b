"""Fixtures of the calibration tests: the fakes module, a fake measurer, a quick plan."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest


def load_fakes() -> ModuleType:
    """tests/calibrate/fakes.py as a module (test folders are not packages)."""
    name = "nodecast_calibrate_test_fakes"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("fakes.py"))
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[name] = module
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    return sys.modules[name]


@pytest.fixture
def fakes() -> ModuleType:
    """The fakes module (FakeMeasurer, topology(), TINY budget, LATENCY_S, BANDWIDTH_BPS)."""
    return load_fakes()


@pytest.fixture
def measurer(fakes):
    """A fresh fake measurer."""
    return fakes.FakeMeasurer()


@pytest.fixture
def quick_plan(fakes):
    """A --quick plan on a fake two-GPU node with the tiny budget."""
    from nodecast.calibrate import plan as P

    return P.build_plan(fakes.topology(2), P.Options(quick=True, budget=fakes.TINY))
