"""The house stays by role: every module of the package sits in a room with a layer, imports
only look down (or sideways within a layer), and neither modules nor rooms import in a circle.

Every import counts: at the top of a module, inside a function and under TYPE_CHECKING alike,
since an import hidden in a function still ties the two modules together. docs/architecture.md
draws the same table.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

import pytest_agentbench

# Bottom up. A room is a subpackage or a module directly in the package; "" is the package's
# own __init__.py (the hook markers and the version), a leaf.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("", "fs", "settings", "testing"),
    ("tasks",),
    ("suites",),
    ("sandbox", "agents", "meter", "grading", "trajectory"),
    ("plan", "trial"),
    ("run", "scoring"),
    ("judge",),
    ("report",),
    ("view",),
    ("plugin", "options", "hookspecs", "header", "cli", "commands"),
)
# Task trees handed to agents as they are (not the project's code)
NOT_CODE = ("workspace", "solution", "cheats")


def modules(package: Path, name: str) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package (task trees left out)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        if any(part in NOT_CODE for part in parts[:-1]):
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join((name, *parts))] = path
    return found


def imported(module: str, path: Path, known: Mapping[str, Path]) -> Iterator[str]:
    """The package's modules that `module` imports, anywhere in its file."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            # `from package import module` names a module; `from module import name` does not
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        else:
            continue
        for target in targets:
            while target not in known and "." in target:
                target = target.rpartition(".")[0]
            if target in known and target != module:
                yield target


def import_graph(package: Path, name: str) -> dict[str, set[str]]:
    known = modules(package, name)
    return {module: set(imported(module, path, known)) for module, path in known.items()}


def room(module: str) -> str:
    return module.partition(".")[2].partition(".")[0]


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Each group of nodes that import each other in a loop (strongly connected, > 1 node, or
    one that imports itself), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:  # Tarjan's algorithm; the package is far shallower than
        index[node] = low[node] = len(index)  # the recursion limit
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1 or node in graph.get(node, ()):
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def problems(graph: Mapping[str, set[str]], layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """What breaks the house: a module in no room of the table, an import that looks up a
    layer, a circle of modules, a circle of rooms."""
    layer = {r: level for level, rooms in enumerate(layers) for r in rooms}
    found = [f"{m}: its room {room(m)!r} has no layer" for m in graph if room(m) not in layer]
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            if layer.get(room(target), -1) > layer.get(room(module), len(layers)):
                found.append(f"{module} imports {target}, a higher layer")
    found += ["modules in a circle: " + " <-> ".join(group) for group in circles(graph)]
    rooms: dict[str, set[str]] = {}
    for module, targets in graph.items():
        rooms.setdefault(room(module), set()).update(
            room(t) for t in targets if room(t) != room(module)
        )
    found += ["rooms in a circle: " + " <-> ".join(group) for group in circles(rooms)]
    return found


def test_the_package_keeps_its_layers_and_has_no_circles() -> None:
    package = Path(pytest_agentbench.__file__).parent
    graph = import_graph(package, "pytest_agentbench")
    assert len(graph) > 100  # the walk found the package, not an empty folder
    assert problems(graph, LAYERS) == []


def test_only_the_face_stands_directly_in_the_package() -> None:
    package = Path(pytest_agentbench.__file__).parent
    top = sorted(p.name for p in package.glob("*.py"))
    face = ["__init__.py", "cli.py", "header.py", "hookspecs.py", "options.py", "plugin.py"]
    assert top == sorted([*face, "settings.py"])


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


THROWAWAY_LAYERS = (("", "fs"), ("tasks",), ("report",))


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            {
                "tasks/model.py": "def load():\n    from pkg.tasks import sources\n",
                "tasks/sources.py": "from pkg.tasks.model import load\n",
            },
            "modules in a circle: pkg.tasks.model <-> pkg.tasks.sources",
            id="a circle inside a function",
        ),
        pytest.param(
            {
                "tasks/model.py": (
                    "from typing import TYPE_CHECKING\n"
                    "if TYPE_CHECKING:\n    from pkg.report.table import Table\n"
                ),
                "report/table.py": "class Table: ...\n",
            },
            "pkg.tasks.model imports pkg.report.table, a higher layer",
            id="an upward import under TYPE_CHECKING",
        ),
        pytest.param(
            {
                "fs/names.py": "from ..tasks import model\n",
                "tasks/model.py": "",
            },
            "pkg.fs.names imports pkg.tasks.model, a higher layer",
            id="a relative import",
        ),
        pytest.param(
            {"fs/a.py": "from pkg.fs import b\n", "fs/b.py": "import pkg.fs.a\n"},
            "modules in a circle: pkg.fs.a <-> pkg.fs.b",
            id="a circle in one room",
        ),
        pytest.param(
            {"views/page.py": ""},
            "pkg.views.page: its room 'views' has no layer",
            id="a room with no layer",
        ),
    ],
)
def test_the_check_finds_what_breaks_the_house(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    package = _package(tmp_path, {"__init__.py": "", **files})
    assert expected in problems(import_graph(package, "pkg"), THROWAWAY_LAYERS)


def test_rooms_on_one_layer_may_import_each_other_but_not_in_a_circle(tmp_path: Path) -> None:
    one_way = {"__init__.py": "", "fs/a.py": "", "fs/b.py": "", "tasks/x.py": "import pkg.fs.a\n"}
    layers = (("", "fs", "tasks"),)
    assert problems(import_graph(_package(tmp_path / "ok", one_way), "pkg"), layers) == []
    both = {**one_way, "fs/b.py": "import pkg.tasks.x\n"}
    found = problems(import_graph(_package(tmp_path / "loop", both), "pkg"), layers)
    assert found == ["rooms in a circle: fs <-> tasks"]
