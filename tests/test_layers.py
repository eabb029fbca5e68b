"""Layering (issue 20, started): no module below ``report/`` imports ``report/``, read from the code's own imports.

The ground modules (errors, values, text, words, units, speedup, headline) hold what models, traces and
workflows need to word and number their results; ``report/`` and ``commands/`` only render and parse. A test
that reads the imports stays true as the code grows.
"""

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "nodecast"
#: Modules allowed to import ``nodecast.report``: the renderers themselves and the command line above them.
ABOVE_REPORT = ("report/", "commands/", "cli.py", "__main__.py")


def report_imports(root: Path) -> list[tuple[str, str]]:
    """(module path, imported name) of every import of ``nodecast.report`` made below it under ``root``."""
    hits = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(ABOVE_REPORT):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            hits += [(rel, n) for n in names if n == "nodecast.report" or n.startswith("nodecast.report.")]
    return hits


def test_no_module_below_report_imports_it():
    assert report_imports(SRC) == []


def test_the_check_sees_an_upward_import(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "m.py").write_text("def f():\n    from nodecast.report.tables import render\n")
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "ok.py").write_text("import nodecast.report.tables\n")
    assert report_imports(tmp_path) == [("models/m.py", "nodecast.report.tables")]
