"""Output functions dispatch on the result's type to implementations found in their package's submodules."""

from __future__ import annotations

import sys
import textwrap

import pytest

from nodecast.report._dispatch import Dispatch


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package ``fakeout`` with one renderer submodule, a helper module (``_helper``) and a result class."""
    root = tmp_path / "fakeout"
    root.mkdir()
    (root / "__init__.py").write_text(textwrap.dedent("""
        from nodecast.report._dispatch import Dispatch
        render = Dispatch(__name__, "render", "fake renderer")
        class Result:
            pass
        class Other:
            pass
    """))
    (root / "result.py").write_text(textwrap.dedent("""
        from fakeout import Result, render
        @render.register(Result)
        def _(result, suffix=""):
            return "rendered" + suffix
    """))
    (root / "_helper.py").write_text("raise RuntimeError('helpers are not imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import fakeout

    yield fakeout
    for name in [n for n in sys.modules if n == "fakeout" or n.startswith("fakeout.")]:
        del sys.modules[name]


def test_submodules_are_imported_on_the_first_call_and_register_their_type(package):
    """Importing the package imports no renderer; the first call finds result.py and calls its implementation."""
    assert "fakeout.result" not in sys.modules
    assert package.render(package.Result(), suffix="!") == "rendered!"
    assert "fakeout.result" in sys.modules and "fakeout._helper" not in sys.modules
    assert package.render.handles(package.Result) and not package.render.handles(package.Other)


def test_a_type_without_implementation_is_a_type_error_naming_the_package(package):
    """A result no submodule handles says which package lacks the implementation."""
    with pytest.raises(TypeError, match=r"fakeout.render: no fake renderer for a Other"):
        package.render(package.Other())


def test_the_report_packages_are_dispatchers():
    """terminal, files, figures and html each expose their entry points as Dispatch objects."""
    from nodecast.report import figures, files, html, terminal

    for fn in (terminal.render, files.document, files.table, figures.draw, html.render):
        assert isinstance(fn, Dispatch)
