"""nodecast evaluate DIR_A DIR_B: every pair of traces with one file name, one summary table; kernel table of one pair."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from nodecast.cli import main

ZOO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "kernel-zoo"


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """Three TITAN runs in A and the same programs on the GTX 970 in B, plus one file only in B."""
    if not ZOO.is_dir():
        pytest.skip(f"{ZOO} is absent")
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    for name in ("vectorAdd-1048576.csv", "bitonic-32768.csv", "quicksort-4096.csv"):
        shutil.copy(ZOO / "Titan" / name, a / name)
        shutil.copy(ZOO / "GTX-970" / name, b / name)
    shutil.copy(ZOO / "GTX-970" / "dotProd-1048576.csv", b / "dotProd-1048576.csv")
    return a, b


def test_two_folders_give_one_table(folders, tmp_path, capsys):
    """Each pair a row, 'all pairs' pooled, the kernel errors over all pairs, the unpaired file said; --table
    writes the long table."""
    a, b = folders
    table = tmp_path / "errors.csv"
    assert main(["evaluate", str(a), str(b), "--models", "default-kernel,dram-ratio", "--table", str(table)]) == 0
    out = capsys.readouterr().out
    assert "3 pairs of traces with the same file name" in out and "evaluated 3" in out
    for row in ("bitonic-32768.csv", "quicksort-4096.csv", "vectorAdd-1048576.csv", "all pairs"):
        assert row in out
    assert "Kernels over all pairs" in out and "1 file only in B: dotProd-1048576.csv" in out
    e = pd.read_csv(table)
    assert set(e["pair"]) == {"bitonic-32768.csv", "quicksort-4096.csv", "vectorAdd-1048576.csv"}
    assert {"WMAPE", "MAPE", "abs_error_s", "actual_s"} <= set(e.columns)


def test_folder_and_file_mixed_or_per_pair_outputs_are_refused(folders, tmp_path, capsys):
    """A folder with a file, or -o/--png (which belong to one pair), is one error line, exit 2."""
    a, b = folders
    assert main(["evaluate", str(a), str(b / "bitonic-32768.csv")]) == 2
    assert "one argument is a folder and the other is not" in capsys.readouterr().err
    assert main(["evaluate", str(a), str(b), "-o", str(tmp_path / "x.csv")]) == 2
    assert "apply to one pair of traces" in capsys.readouterr().err


def test_one_pair_prints_the_kernel_table(capsys):
    """evaluate of one pair prints MAPE, WMAPE and totals of the kernels per model."""
    if not ZOO.is_dir():
        pytest.skip(f"{ZOO} is absent")
    assert main(["evaluate", str(ZOO / "Titan" / "bitonic-32768.csv"), str(ZOO / "Tesla-K20" / "bitonic-32768.csv"),
                 "--models", "wave-scaling,dram-ratio"]) == 0
    out = capsys.readouterr().out
    assert "Kernels: MAPE and WMAPE (%) of the 120 aligned launches" in out
    assert "total_error" in out
