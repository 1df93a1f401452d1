"""The house's limits, over every tree of Python in the repository: a module a reader takes in at
once (at most 300 lines), a function that fits on a screen (at most 50 lines, decorators and
docstring included), and no import cycle among its modules. docs/development.md states them."""

import ast
import functools
from pathlib import Path

from tests.support import REPO

TREES = ("app", "scripts", "localcluster", "e2e", "tests")
MODULE_LINES = 300
FUNCTION_LINES = 50


def modules() -> list[Path]:
    return sorted(p for tree in TREES for p in (REPO / tree).rglob("*.py"))


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The module at `path`, parsed once for both tests (parsing is most of their time)."""
    return ast.parse(path.read_text())


def name_of(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def over_the_limits() -> dict[str, int]:
    over = {}
    for path in modules():
        text = path.read_text()
        where = str(path.relative_to(REPO))
        if (n := len(text.splitlines())) > MODULE_LINES:
            over[where] = n
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - first + 1
                if length > FUNCTION_LINES:
                    over[f"{where}:{node.name}"] = length
    return over


def test_nothing_is_over_the_limits() -> None:
    assert modules(), "no module found"
    assert over_the_limits() == {}


def imports(path: Path, known: set[str]) -> set[str]:
    """The repository's modules that `path` imports, anywhere in it (TYPE_CHECKING included)."""
    found = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        found |= {name for name in names if name in known}
    return found


def cycles() -> list[list[str]]:
    """The import cycles among the repository's modules (Tarjan's strongly connected parts)."""
    paths = {name_of(p): p for p in modules()}
    graph = {name: imports(path, set(paths)) - {name} for name, path in paths.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            part = []
            while (top := stack.pop()) != node:
                part.append(top)
            if part:
                out.append(sorted([node, *part]))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return out


def test_no_import_cycle() -> None:
    assert cycles() == []
