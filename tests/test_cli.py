"""Tests of the command-line entry point."""

import pytest

from nodecast import __version__
from nodecast.cli import COMMAND_MODULES, build_parser, main


def test_every_registered_command_builds():
    """Every module named in COMMAND_MODULES imports and registers its subcommand."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")  # noqa: SLF001
    for name in COMMAND_MODULES:
        assert any(choice == name or choice.startswith(name[:4]) for choice in sub.choices), name


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
