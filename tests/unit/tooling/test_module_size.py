"""The house's size limits on the service's code: a module a reader takes in at once (at most
300 lines), a function that fits on a screen (at most 50 lines, decorators and docstring
included). docs/development.md states both."""

import ast
from pathlib import Path

from tests.support import REPO

APP = REPO / "app"
MODULE_LINES = 300
FUNCTION_LINES = 50


def modules() -> list[Path]:
    return sorted(APP.rglob("*.py"))


def test_no_module_is_over_the_limit() -> None:
    over = {
        str(p.relative_to(REPO)): n
        for p in modules()
        if (n := len(p.read_text().splitlines())) > MODULE_LINES
    }
    assert modules(), "no module found under app/"
    assert over == {}


def test_no_function_is_over_the_limit() -> None:
    over = {}
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - first + 1
                if length > FUNCTION_LINES:
                    over[f"{path.relative_to(REPO)}:{node.name}"] = length
    assert over == {}
