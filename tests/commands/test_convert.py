"""``nodecast convert TRACE -o OUT`` through ``nodecast.cli.main``."""

from __future__ import annotations

import numpy as np
import pytest

from nodecast import cli
from nodecast.traces.load import load_trace

SAMPLE = "sample:nvprof_ahead-bandwidthtest-htod-pageable_titan-k20x"


@pytest.fixture(autouse=True)
def only_convert_command(monkeypatch):
    """Build the parser with the convert subcommand only, so these tests do not depend on the others."""
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("convert",))


def run(argv: list[str]) -> int:
    """cli.main's exit code, including argparse's SystemExit on usage errors."""
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_convert_to_parquet_and_back(capsys, tmp_path):
    """Parquet output loads back equal, and one summary line counts the ops per kind."""
    out = tmp_path / "t.parquet"
    assert run(["convert", SAMPLE, "-o", str(out)]) == 0
    line = capsys.readouterr().out.strip()
    assert line.count("\n") == 0
    assert f"wrote {out}: 2929 ops (0 kernels, 2900 memcpy, 0 memsets, 29 syncs)" in line
    original, back = load_trace(SAMPLE), load_trace(out)
    for name, column in original.columns.items():
        np.testing.assert_array_equal(back[name], column, err_msg=name)


def test_convert_to_csv(capsys, tmp_path):
    """CSV output has a header and one line per op, with labels rather than codes."""
    out = tmp_path / "t.csv"
    assert run(["convert", SAMPLE, "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 1 + 2929
    assert lines[0].startswith("kind,copy_kind,src_mem,dst_mem,bytes,start_ns")
    assert ",HTOD,pageable,device," in out.read_text()


def test_convert_real_trace(capsys, shared_traces, tmp_path):
    """A real nsys export converts, and the summary names its source format."""
    out = tmp_path / "t.parquet"
    assert run(["convert", str(shared_traces / "nsys_vectoradd-streams_t4.sqlite"), "-o", str(out)]) == 0
    assert "200 kernels, 600 memcpy, 0 memsets, 4 syncs" in capsys.readouterr().out
    assert out.exists()


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        (["convert", SAMPLE, "-o", "OUT.txt"], ("unsupported output extension '.txt'", ".parquet, .arrow or .csv")),
        (["convert", "MISSING.sqlite", "-o", "OUT.parquet"], ("MISSING.sqlite", "no such file")),
        (["convert", "sample:nope", "-o", "OUT.parquet"], ("no sample trace named 'nope'", "Available samples")),
        (["convert", SAMPLE, "-o", "OUT/missing/t.parquet"], ("-o: folder does not exist",)),
    ],
)
def test_user_errors(capsys, tmp_path, argv, fragments):
    """Bad extension, missing input, unknown sample: exit 2, one stderr line, no output file."""
    argv = [str(tmp_path / a) if a.startswith(("OUT", "MISSING")) else a for a in argv]
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    for fragment in fragments:
        assert fragment in err
    assert list(tmp_path.iterdir()) == []


def test_output_required(capsys):
    """Leaving out -o is a usage error (exit 2)."""
    assert run(["convert", SAMPLE]) == 2
    assert "-o" in capsys.readouterr().err
