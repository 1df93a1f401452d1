"""The CRD's `x-kubernetes-validations` rules, evaluated with `cel-python` (its regular
expressions are RE2's, as Kubernetes' are) on each node they are declared on, as the API server
evaluates them."""

import functools
from collections.abc import Iterator
from typing import Any

import celpy
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from app.cli.structural import Problem, walk


def broken(schema: dict[str, Any], value: Any) -> list[Problem]:
    """A Problem for each rule `value` breaks, at the rule's field path."""
    return sorted(set(_broken(schema, value)), key=lambda p: (p.path, p.message))


def _broken(schema: dict[str, Any], value: Any) -> Iterator[Problem]:
    for node, item, path in walk(schema, value):
        rules = node.get("x-kubernetes-validations", [])
        if not rules:
            continue
        activation = {"self": json_to_cel(item)}  # once for all of the node's rules
        for rule in rules:
            where = (path + rule.get("fieldPath", "")).lstrip(".")
            verdict = _verdict(rule["rule"], activation)
            if verdict is not True:
                yield Problem(where, verdict or rule["message"])


def _verdict(rule: str, activation: dict[str, Any]) -> bool | str:
    """True where the rule holds, False where it does not, what went wrong where it fails."""
    try:
        result = program(rule).evaluate(activation)
    except CELEvalError as err:
        return f"the rule could not be evaluated: {err.args[0] if err.args else err}"
    if isinstance(result, CELEvalError):
        return f"the rule could not be evaluated: {result.args[0] if result.args else result}"
    if not isinstance(result, celpy.celtypes.BoolType):
        return f"the rule did not give a boolean: {result!r}"
    return bool(result)


@functools.cache
def program(rule: str) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(rule), functions=KUBERNETES_LIBRARY)


def _sum(items: Any) -> Any:
    return celpy.celtypes.IntType(sum(items))


def _split(text: Any, separator: Any) -> Any:
    return celpy.celtypes.ListType(celpy.celtypes.StringType(s) for s in text.split(separator))


def _trim(text: Any) -> Any:
    return celpy.celtypes.StringType(text.strip())


# The part of Kubernetes' CEL libraries (k8s.io/apiserver/pkg/cel/library, and cel-go's strings
# extension) the CRD's rules and the pod-security policy use and cel-python lacks: `list.sum()`,
# `string.split(separator)`, `string.trim()` (cel-go trims Unicode white space, as strip does).
KUBERNETES_LIBRARY: dict[str, Any] = {"sum": _sum, "split": _split, "trim": _trim}


def every_rule(schema: Any) -> Iterator[dict[str, Any]]:
    """Every x-kubernetes-validations rule of `schema`."""
    if isinstance(schema, dict):
        yield from schema.get("x-kubernetes-validations", [])
        for key, value in schema.items():
            if key != "x-kubernetes-validations":
                yield from every_rule(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from every_rule(item)
