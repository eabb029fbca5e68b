"""nodecast evaluate DIR_A DIR_B: every pair of traces with one file name, one summary table; kernel table of one pair."""

from __future__ import annotations

import json
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


def test_headline_ranks_transfer_and_kernel_models_apart(folders, tmp_path):
    """Transfer models are scored on copies and kernel models on kernels: the headline ranks each kind among its
    own (one entry per kind, saying the ops it was scored on, with keeping A's times on those same ops), never a
    kernel model against a transfer model."""
    a, b = folders
    doc_path = tmp_path / "pairs.json"
    assert main(["evaluate", str(a), str(b), "--models", "ahead,peak-bandwidth,dram-ratio,wave-scaling",
                 "--json", str(doc_path)]) == 0
    doc = json.loads(doc_path.read_text())
    pooled = {(r["model"], r["category"]): r for r in doc["pooled"]}
    ranked = [n for n in doc["headline"] if n["label"].startswith("lowest pooled WMAPE")]
    assert [n["label"] for n in ranked] == [
        f"lowest pooled WMAPE of the transfer models: "
        f"{min(('ahead', 'peak-bandwidth'), key=lambda m: pooled[m, 'all']['WMAPE'])}",
        f"lowest pooled WMAPE of the kernel models: "
        f"{min(('dram-ratio', 'wave-scaling'), key=lambda m: pooled[m, 'all']['WMAPE'])}"]
    transfer, kernel = ranked
    assert transfer["value"] == min(pooled[m, "all"]["WMAPE"] for m in ("ahead", "peak-bandwidth"))
    assert "7 ops (htod_unknown 4, dtoh_unknown 3)" in transfer["note"]
    assert "122 ops (kernel 122)" in kernel["note"]
    # Keeping A's times, over the same ops as the kind's best model (here: its categories).
    copies = [r for r in doc["errors"] if r["model"] == "unchanged" and r["category"].endswith("_unknown")]
    unchanged_on_copies = 100 * sum(r["abs_error_s"] for r in copies) / sum(r["actual_s"] for r in copies)
    assert f"keeping A's times on those ops: {unchanged_on_copies:.1f} %" in transfer["note"]
    assert f"keeping A's times on those ops: {pooled['unchanged', 'kernel']['WMAPE']:.1f} %" in kernel["note"]


def test_folder_mode_prints_the_pairs_notes_once_each(folders, tmp_path, capsys):
    """The notes of every pair are printed as in one-pair mode, each once, saying how many pairs it applies to;
    the page lists them instead of 'No assumption was recorded'."""
    a, b = folders
    html, doc_path = tmp_path / "pairs.html", tmp_path / "pairs.json"
    assert main(["evaluate", str(a), str(b), "--models", "ahead,wave-scaling", "--json", str(doc_path),
                 "--html", str(html)]) == 0
    out = capsys.readouterr().out
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert len(notes) == len(set(notes))
    from_note = [n for n in notes if n.startswith("note: --from omitted")]
    assert len(from_note) == 1 and from_note[0].endswith("[all 3 pairs]")
    # A note whose numbers differ by pair is one line, said to differ, not one line per pair.
    gamma = [n for n in notes if "wave-scaling: gamma from the bytes copied" in n]
    assert len(gamma) == 1 and "3 pairs" in gamma[0] and "differ" in gamma[0]
    doc = json.loads(doc_path.read_text())
    assert [f"note: {n}" for n in doc["notes"]] == notes
    page = html.read_text()
    assert "No assumption was recorded" not in page and "--from omitted" in page
