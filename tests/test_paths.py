"""Tests for nodecast.paths: names the OS cannot look up are one-line errors, never OSError tracebacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodecast.cli import main
from nodecast.errors import InputError

#: One path component over the 255-byte NAME_MAX of Linux file systems.
LONG = "x" * 300
#: A machine name whose catalogue file (``NAME.toml``) has a component over 255 bytes.
LONG_MACHINE = "y" * 251
SAMPLE = "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"


def test_probe_turns_a_name_too_long_into_an_input_error(tmp_path):
    """A stat that fails with ENAMETOOLONG is an InputError naming the option; a missing file is None."""
    from nodecast import paths

    assert paths.probe(tmp_path / "missing") is None
    assert paths.probe(tmp_path) is not None
    with pytest.raises(InputError, match="too long") as exc:
        paths.probe(tmp_path / LONG, "-o")
    assert exc.value.key == "-o"
    assert not paths.names_a_file(tmp_path / LONG)
    assert not paths.names_a_file("a\0b")
    assert paths.names_a_file(__file__)


def _cases(tmp_path):
    out = str(tmp_path / f"{LONG}.csv")
    return {
        "inspect trace": ["inspect", LONG],
        "inspect --json": ["inspect", SAMPLE, "--json", str(tmp_path / f"{LONG}.json")],
        "replay -o": ["replay", SAMPLE, "-o", out],
        "replay --html": ["replay", SAMPLE, "--html", str(tmp_path / f"{LONG}.html")],
        "convert -o": ["convert", SAMPLE, "-o", str(tmp_path / f"{LONG}.parquet")],
        "project --to": ["project", SAMPLE, "--to", LONG_MACHINE],
        "project --from": ["project", SAMPLE, "--from", LONG_MACHINE, "--to", "dgx-a100"],
        "forecast --to file": ["forecast", SAMPLE, "--to", f"{LONG}.toml"],
        "forecast --to name": ["forecast", SAMPLE, "--to", LONG_MACHINE],
        "evaluate A": ["evaluate", LONG, SAMPLE, "--to", "dgx-a100"],
        "evaluate B": ["evaluate", SAMPLE, LONG, "--to", "dgx-a100"],
        "curves --machines": ["curves", "--machines", LONG_MACHINE],
        "machines show": ["machines", "show", LONG_MACHINE],
        "machines diff": ["machines", "diff", "dgx-a100", LONG_MACHINE],
        "machines template --gpu": ["machines", "template", "--gpu", LONG_MACHINE],
        "simulate --machine": ["simulate", "--machine", LONG_MACHINE],
        "simulate --starpu-dir": ["simulate", "--starpu-dir", LONG, "--starpu-machine", "attila"],
        "record -o": ["record", "-o", str(tmp_path / f"{LONG}.sqlite"), "python", "-c", "1"],
        "record program": ["record", "-o", str(tmp_path / "a.sqlite"), f"{LONG}.py"],
    }


@pytest.mark.parametrize("case", list(_cases(Path("/tmp"))))  # the names only: each test uses its tmp_path
def test_names_too_long_are_one_line_errors(tmp_path, capsys, case):
    """A file name over 255 bytes or a machine name over 250 characters, in every slot that names a file or
    a machine: exit 2, one line on stderr, nothing on stdout and nothing written (was OSError: File name too
    long from Path.exists/is_file/is_dir)."""
    argv = _cases(tmp_path)[case]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("nodecast: error: ") and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []
