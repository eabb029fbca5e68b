"""The layout holds (issue 20): layers import only from below, no import circles, no module over 600 lines.

Read from the code's own imports (every ``import`` and ``from ... import`` in ``src/nodecast``, those inside
functions included: a lazy import that closes a circle is still a circle in the design), so the checks stay true
as the code grows. The layers, bottom to top, as ``docs/extending.md`` draws them:

ground (top-level modules) -> machines -> traces, record -> models, graph -> engine, cost -> runtime
-> workflows, fit, calibrate -> report -> commands, cli

Packages on one level are siblings: neither imports the other.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "nodecast"

#: Package -> level. Top-level modules not named here are the ground (level 0).
LEVELS = {
    "machines": 1,
    "traces": 2, "record": 2,
    "models": 3, "graph": 3,
    "engine": 4, "cost": 4,
    "runtime": 5,
    "workflows": 6, "fit": 6, "calibrate": 6,
    "report": 7,
    "commands": 8, "cli": 8, "__main__": 8,
}
#: The front door (``nodecast/__init__.py``) re-exports the workflows lazily, and ``nodecast.__version__`` is read
#: from it by any layer; it counts as ground for its importers and is not checked itself.
FRONT_DOOR = "nodecast"
#: About 600 lines: a module longer than this does more than one job.
MAX_LINES = 600


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(root: Path = SRC) -> dict[str, set[str]]:
    """Module -> the ``nodecast`` modules it imports (a ``from pkg import name`` counts as ``pkg.name`` when that is a
    module, else as ``pkg``)."""
    paths = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    out: dict[str, set[str]] = {}
    for mod, path in paths.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    found.add(full if full in paths else base)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        out[mod] = {m for m in found if m in paths and m != mod}
    return out


def level(module: str) -> int:
    parts = module.split(".")
    if module == FRONT_DOOR:
        return 0
    return LEVELS.get(parts[1], 0)


def package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LEVELS else ""


def violations(root: Path = SRC) -> list[tuple[str, str]]:
    """(importer, imported) for every import of a higher level or of a sibling package on the same level."""
    bad = []
    for mod, targets in sorted(imports(root).items()):
        if mod == FRONT_DOOR:
            continue
        for t in sorted(targets):
            up = level(t) > level(mod)
            sibling = level(t) == level(mod) > 0 and package(t) != package(mod) and level(mod) != LEVELS["commands"]
            if up or sibling:
                bad.append((mod, t))
    return bad


def circles(root: Path = SRC) -> list[list[str]]:
    """Each import circle (a strongly connected set of two or more modules), as one cycle through it."""
    graph = imports(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm; the package is a few hundred modules deep at most
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(_cycle_through(sorted(comp), graph))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _cycle_through(members: list[str], graph: dict[str, set[str]]) -> list[str]:
    """One cycle inside a strongly connected set, from its first member back to it (breadth first: the shortest)."""
    start, inside = members[0], set(members)
    previous = {start: ""}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & inside):
            if w == start:
                path = [v]
                while previous[path[-1]]:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if w not in previous:
                previous[w] = v
                queue.append(w)
    return members


def long_modules(root: Path = SRC, limit: int = MAX_LINES) -> list[tuple[str, int]]:
    """(module path, lines) of every module over ``limit`` lines."""
    out = []
    for path in sorted(root.rglob("*.py")):
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > limit:
            out.append((path.relative_to(root).as_posix(), n))
    return out


def test_every_import_goes_down():
    assert violations() == []


def test_no_import_circles():
    assert circles() == []


def test_no_module_over_600_lines():
    assert long_modules() == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "nodecast"
    for rel, text in {"__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_checks_see_an_upward_import_a_sibling_and_a_lazy_circle(tmp_path):
    root = _tree(tmp_path, {
        "models/__init__.py": "", "graph/__init__.py": "", "report/__init__.py": "",
        "models/m.py": "def f():\n    from nodecast.report.tables import render\n",
        "report/tables.py": "from nodecast.models import m\n",
        "graph/g.py": "from nodecast.models.m import f\n",
        "models/a.py": "from nodecast.models import b\n",
        "models/b.py": "def g():\n    from nodecast.models.a import x\n",
    })
    assert violations(root) == [("nodecast.graph.g", "nodecast.models.m"), ("nodecast.models.m", "nodecast.report.tables")]
    assert sorted(circles(root)) == [["nodecast.models.a", "nodecast.models.b", "nodecast.models.a"],
                             ["nodecast.models.m", "nodecast.report.tables", "nodecast.models.m"]]


def test_the_line_check_sees_a_long_module(tmp_path):
    root = _tree(tmp_path, {"long.py": "x = 1\n" * 601, "short.py": "x = 1\n" * 600})
    assert long_modules(root) == [("long.py", 601)]
