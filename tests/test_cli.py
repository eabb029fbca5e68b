"""Tests of the command-line entry point."""

import pytest

from nodecast import __version__
from nodecast.cli import COMMAND_MODULES, build_parser, main


def test_every_registered_command_builds():
    """Every module named in COMMAND_MODULES imports and registers its subcommand."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")  # noqa: SLF001
    for name in COMMAND_MODULES:
        assert any(choice.replace("-", "_") == name or choice.startswith(name[:4]) for choice in sub.choices), name


def test_version(capsys):
    """--version prints the package version and exits 0."""
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_usage_error_is_one_line_exit_2(capsys):
    """An unknown option is a usage error: exit 2, one line on stderr."""
    with pytest.raises(SystemExit) as exc:
        main(["inspect", "trace.sqlite", "--no-such-option"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--no-such-option" in err
    assert err.startswith("nodecast: unrecognized arguments:")  # was "nodecast nodecast: ..."
    with pytest.raises(SystemExit):
        main(["inspect"])
    assert capsys.readouterr().err.startswith("nodecast inspect: the following arguments are required")


_RUN_WITH_READER_GONE = """
import sys
from nodecast.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("output", [["--html", "page.html"], ["--json", "-", "--html", "page.html"]])
def test_files_are_still_written_when_the_reader_of_stdout_is_gone(tmp_path, output):
    """`nodecast project ... --html page.html | head -1`: the reader leaving early ends the terminal output, not the
    command: the page asked for is still written, exit 0, no traceback."""
    import os
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to stdout now fails with EPIPE, deterministically
    argv = ["project", "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x", "--from", "titan", "--to",
            "summit", *output]
    proc = subprocess.run([sys.executable, "-c", _RUN_WITH_READER_GONE, *argv], stdout=write_end,
                          stderr=subprocess.PIPE, cwd=tmp_path, timeout=300, check=False)
    os.close(write_end)
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "Exception ignored" not in err
    assert (tmp_path / "page.html").stat().st_size > 0
