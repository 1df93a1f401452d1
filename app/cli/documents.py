"""The documents of a manifest stream as the API server's strict decoding reads them: YAML with
no key given twice in one mapping, dates left as strings, a List's items in its place."""

from dataclasses import dataclass
from typing import Any

import yaml

from app.core.model.errors import RenderError

# libyaml where PyYAML has it (its wheels do): the same objects, read several times faster.
_BASE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
LIST_KINDS = {"List", "MXJobList"}


class StrictLoader(_BASE):  # type: ignore[misc]
    """The safe loader, noting each key a mapping gives twice (where the API server's strict
    decoding says `key "x" already set in map`) and reading a date as the string it is
    (Kubernetes' YAML reader has no date type: a label value `2024-01-01` is a string)."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.twice: list[str] = []

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if _hashable(key) and key in seen:
                self.twice.append(
                    f'line {line}: key "{key}" already set in this mapping (line {seen[key]}): '
                    "strict field validation refuses a key given twice"
                )
            elif _hashable(key):
                seen[key] = line
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float | int:
        # Kubernetes' YAML reader turns YAML into JSON, where 1.0 is written 1: an integer.
        value: float = super().construct_yaml_float(node)
        return int(value) if value.is_integer() else value


StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", StrictLoader.construct_yaml_str)
StrictLoader.add_constructor("tag:yaml.org,2002:float", StrictLoader.construct_yaml_float)


def _hashable(key: Any) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True


@dataclass(frozen=True)
class Document:
    """One object of the stream, where it is (`document 2`, `document 1, item 3`), and the keys
    it gives twice."""

    where: str
    value: Any
    twice: tuple[str, ...] = ()


def documents(text: str) -> list[Document]:
    """The documents of YAML `text`, each List's items in its place; RenderError if it is not
    YAML (the line named) or holds nothing."""
    loader = StrictLoader(text)
    out = []
    try:
        n = 0
        while loader.check_node():
            node = loader.get_node()
            before = len(loader.twice)
            document = loader.construct_document(node)
            if document is None:
                continue
            n += 1
            out += _items(n, document, tuple(loader.twice[before:]))
    except yaml.YAMLError as err:
        raise RenderError(f"not YAML: {_one_line(err)}") from None
    finally:
        loader.dispose()
    if not out:
        raise RenderError("no MXJob in the input")
    return out


def _items(n: int, document: Any, twice: tuple[str, ...]) -> list[Document]:
    # `kubectl get mxjobs -o yaml` wraps the jobs in a List: check a cluster's jobs in one go.
    if isinstance(document, dict) and document.get("kind") in LIST_KINDS:
        items = document.get("items") or []
        # A key given twice in a List is the List's to refuse: kubectl sends each item alone.
        found = [Document(f"document {n}, item {m}", i) for m, i in enumerate(items, start=1)]
        return found if not twice else [Document(f"document {n}", None, twice), *found]
    return [Document(f"document {n}", document, twice)]


def _one_line(err: yaml.YAMLError) -> str:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark else str(problem)
