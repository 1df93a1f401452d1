"""No module of app/ reads another object's private attribute (`client._client`, say): only a
class's own, through `self`, `cls` or `super()`. A library's private attribute changes in any release
without notice; its public API is what a pin promises."""

import ast

from tests.support import REPO

APP = REPO / "app"


def private_reads(source: str) -> list[str]:
    """`owner._name` for each private attribute read on other than self, cls or super()."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or (name.startswith("__") and name.endswith("__")):
            continue
        if ast.unparse(node.value) in ("self", "cls", "super()"):
            continue
        found.append(f"{ast.unparse(node.value)}.{name}")
    return found


def test_the_check_sees_a_private_read() -> None:
    assert private_reads("generic = client._client\nself._own = super()._own") == ["client._client"]


def test_no_module_reads_a_private_attribute_of_another_object() -> None:
    found = {
        str(path.relative_to(REPO)): reads
        for path in sorted(APP.rglob("*.py"))
        if (reads := private_reads(path.read_text()))
    }
    assert found == {}
