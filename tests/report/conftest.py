"""Where the HTML report tests keep their screenshots, printed at the end of the run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SCREENSHOTS = pytest.StashKey[Path]()


@pytest.fixture(scope="session")
def screenshots(request, tmp_path_factory) -> Path:
    """A folder for screenshots: $NODECAST_ARTEFACTS/html-report when set, else one under pytest's temporary folder."""
    base = os.environ.get("NODECAST_ARTEFACTS")
    folder = Path(base) / "html-report" if base else tmp_path_factory.getbasetemp() / "html-report-screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    request.config.stash[SCREENSHOTS] = folder
    return folder


def pytest_terminal_summary(terminalreporter, config):
    folder = config.stash.get(SCREENSHOTS, None)
    if folder is not None:
        shots = sorted(p.name for p in folder.glob("*.png"))
        terminalreporter.write_line(f"HTML report screenshots ({len(shots)}): {folder}")
