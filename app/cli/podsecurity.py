"""`render --pod-security LEVEL`: the pod-security component's ValidatingAdmissionPolicy
(manifests/components/pod-security/policy.yaml, beside this module as pod-security.yaml)
evaluated with cel-python as the API server evaluates it, for a namespace whose
`pod-security.kubernetes.io/enforce` label is LEVEL. The platform's allow-lists are a
cluster's ConfigMap, which render does not see: they are left out (every key absent)."""

import functools
from pathlib import Path
from typing import Any

import yaml
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from app.cli import rules

POLICY_FILE = Path(__file__).with_name("pod-security.yaml")
LEVELS = ("privileged", "baseline", "restricted")
LABEL = "pod-security.kubernetes.io/enforce"
PARAMS = {"metadata": {"name": "mxjob-pod-policy", "namespace": "render"}, "data": {}}


@functools.cache
def policy() -> dict[str, Any]:
    """The policy's spec (read once: callers do not change it)."""
    (found,) = (
        d for d in yaml.safe_load_all(POLICY_FILE.read_text())
        if d and d.get("kind") == "ValidatingAdmissionPolicy"
    )  # fmt: skip
    spec: dict[str, Any] = found["spec"]
    return spec


def refusals(job: dict[str, Any], namespace: str, level: str) -> list[str]:
    """The policy's message for each validation `job` (as the API server stores it) breaks in
    `namespace` enforcing `level`, in the policy's order."""
    namespace_object = {"metadata": {"name": namespace, "labels": {LABEL: level}}}
    given = {"object": job, "namespaceObject": namespace_object, "params": PARAMS,
             "request": {"operation": "CREATE"}}  # fmt: skip
    activation = {name: json_to_cel(value) for name, value in given.items()}
    variables = activation["variables"] = celtypes.MapType()
    for variable in policy()["variables"]:  # in order: each may use those before it
        value = rules.program(variable["expression"]).evaluate(activation)
        variables[celtypes.StringType(variable["name"])] = value
    found = []
    for check in policy()["validations"]:
        if _value(check["expression"], activation) is not True:
            message = _value(check["messageExpression"], activation)
            found.append(message if isinstance(message, str) else f"failed: {check['expression']}")
    return found


def _value(expression: str, activation: dict[str, Any]) -> Any:
    """The expression's value (a bool as bool), or the CELEvalError it gave."""
    try:
        result = rules.program(expression).evaluate(activation)
    except CELEvalError as err:
        return err
    return bool(result) if isinstance(result, celtypes.BoolType) else result
