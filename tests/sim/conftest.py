"""Fixtures for the simulator tests: the shared StarPU data and the SimGrid oracle."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

#: ../shared/data/starpu relative to the repository root.
STARPU_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "starpu"
SIMGRID_PYTHON = "/usr/bin/python3"
ORACLE = Path(__file__).resolve().parent / "simgrid_oracle.py"


@functools.cache
def simgrid_missing_reason() -> str | None:
    """Why the SimGrid oracle cannot run here, or None when it can."""
    if not Path(SIMGRID_PYTHON).exists():
        return f"{SIMGRID_PYTHON} does not exist (install Debian's python3-simgrid)"
    try:
        proc = subprocess.run(
            [SIMGRID_PYTHON, "-c", "import simgrid"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run {SIMGRID_PYTHON}: {exc}"
    if proc.returncode != 0:
        return f"{SIMGRID_PYTHON} cannot import simgrid (apt-get install -y python3-simgrid)"
    return None


@pytest.fixture
def starpu_data() -> Path:
    """The shared StarPU calibration folder; skips the test when it is absent."""
    if not STARPU_DATA.is_dir():
        pytest.skip(f"shared StarPU data not found at {STARPU_DATA}")
    return STARPU_DATA


def _run_oracle(spec: dict, folder: Path) -> dict[str, float]:
    path = folder / "oracle_spec.json"
    path.write_text(json.dumps(spec))
    proc = subprocess.run(
        [SIMGRID_PYTHON, str(ORACLE), str(path)], capture_output=True, text=True, timeout=600, check=False
    )
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        pytest.fail(f"SimGrid oracle failed with code {proc.returncode}")
    return json.loads(proc.stdout.splitlines()[-1])["done"]


@pytest.fixture
def simgrid_oracle(tmp_path) -> Callable[[dict], dict[str, float]]:
    """Run a scenario spec in SimGrid (see simgrid_oracle.py); skips when /usr/bin/python3 cannot import simgrid."""
    reason = simgrid_missing_reason()
    if reason:
        pytest.skip(reason)
    return lambda spec: _run_oracle(spec, tmp_path)
