"""The real Metacontroller drives the real hook: an example MXJob gets its pods and Services."""

import time
from pathlib import Path
from typing import Any

import yaml

from .conftest import RealStack

REPO = Path(__file__).resolve().parents[2]


def _wait_for(check: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not seen after {timeout} s")
        time.sleep(0.2)


def test_an_example_gets_its_children_and_a_created_condition(
    real_stack: RealStack, namespace: str
) -> None:
    server = real_stack.apiserver
    job = yaml.safe_load((REPO / "examples" / "dist-cpu.yaml").read_text())
    job["metadata"]["namespace"] = namespace
    server.apply(job)
    name = job["metadata"]["name"]

    def children() -> tuple[list[str], list[str]] | None:
        pods = server.get("pods", f"--namespace={namespace}")["items"]
        services = server.get("services", f"--namespace={namespace}")["items"]
        found = (
            sorted(p["metadata"]["name"] for p in pods),
            sorted(s["metadata"]["name"] for s in services),
        )
        return found if len(found[0]) == 5 and len(found[1]) == 5 else None

    pods, services = _wait_for(children, 60, "5 pods and 5 Services")
    expected = [
        f"{name}-scheduler-0", f"{name}-server-0", f"{name}-server-1",
        f"{name}-worker-0", f"{name}-worker-1",
    ]  # fmt: skip
    assert pods == sorted(expected)
    assert services == sorted(expected)

    def created() -> list[Any] | None:
        status = server.get("mxjob", name, f"--namespace={namespace}").get("status") or {}
        conditions = status.get("conditions") or []
        return conditions if any(c["type"] == "Created" for c in conditions) else None

    conditions = _wait_for(created, 30, "the Created condition")
    assert [(c["type"], c["status"], c["reason"]) for c in conditions] == [
        ("Created", "True", "MXJobCreated")
    ]
    owner = server.get("pod", f"{name}-worker-0", f"--namespace={namespace}")["metadata"]
    assert owner["ownerReferences"][0]["kind"] == "MXJob"
    assert owner["ownerReferences"][0]["controller"] is True
