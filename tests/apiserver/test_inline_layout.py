"""A CompositeController that declares no ConfigMap children (every pod carries MX_CONFIG whole)
against the shipped one, under the real Metacontroller: the size rule of the layout in force
refuses at creation a job whose syncs could never be answered inline, which the shipped
controller runs; and user text with `$` in it reaches every process exactly as written in
either layout, the pods as the API server stores them resolved as the kubelet resolves them
(app/core/mxnet/kubeenv.py)."""

import json
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import pytest

from app.core.mxnet import kubeenv, mxconfig
from localcluster.realstack import install_controller
from localcluster.rest import Rest
from localcluster.waiting import wait_for
from tests.support import jobs as s
from tests.support.scenario import Job, apply_job
from tests.support.size_shapes import workers
from tests.support.user_text import ANNOTATION, expected_labels, tune_job

from .conftest import RealStack

# A 32-letter name: `inline-` and 25 letters.
LONG_NAME = "inline-" + "a" * 25
HINT = "the CompositeController declares no ConfigMap children"
TEXT = "rtx-$$-$(DMLC_ROLE)-$(HOME)-$(-$"


@contextmanager
def without_configmaps(stack: RealStack) -> Iterator[None]:
    """Our CompositeController without its ConfigMap children until the block ends, then as
    shipped again."""
    install_controller(stack.apiserver, stack.hook.url, config_maps=False)
    try:
        yield
    finally:
        install_controller(stack.apiserver, stack.hook.url)


def _job(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    job = s.mxjob(spec, name)
    del job["metadata"]["namespace"]
    return job


def _last_condition(job: Job) -> dict[str, Any]:
    conditions = job.status().get("conditions") or [{}]
    last: dict[str, Any] = conditions[-1]
    return last


def test_a_job_too_large_inline_is_refused_at_creation_and_runs_with_configmaps(
    real_stack: RealStack, rest: Rest, namespace: str
) -> None:
    """1 Scheduler and 1,199 Workers named with 32 letters: inline, every sync once its pods
    existed would carry about 227 MiB by the estimate (the hook's limit is 64), so it is refused at once,
    for good, with what to change; under the shipped controller its ConfigMap and pods are
    created."""
    spec = workers(1200)
    with without_configmaps(real_stack):
        refused = apply_job(real_stack.apiserver, rest, namespace, _job(LONG_NAME, spec))
        condition = wait_for(
            lambda: _last_condition(refused),
            "the job refused",
            until=lambda c: c.get("reason") == "MXJobInvalidSpec",
        )
    assert (condition["type"], condition["status"]) == ("Failed", "True")
    assert "the size rule: with every pod running, a sync request" in condition["message"]
    assert HINT in condition["message"]
    assert refused.children() == {}

    created = apply_job(real_stack.apiserver, rest, namespace, _job(LONG_NAME[:-1] + "b", spec))
    config_map = f"ConfigMap/{mxconfig.config_map_name(created.name)}"

    def started() -> dict[str, Any]:
        children = created.children()
        pods = [k for k in children if k.startswith("Pod/")]
        return children if config_map in children and len(pods) >= 10 else {}

    children = wait_for(started, "the ConfigMap and the first pods")
    # Metacontroller writes the status once every child is created; an invalid spec would
    # have had none. The ConfigMap is the whole job's.
    assert children[config_map]["data"]["DMLC_NUM_WORKER"] == "1199"
    real_stack.apiserver.kubectl(
        "delete", "mxjob", created.name, f"--namespace={namespace}", "--wait=false"
    )  # a thousand pods more would only slow the tests that follow


def _processes(job: Job) -> dict[str, dict[str, str]]:
    children = job.children()
    maps = {c["metadata"]["name"]: c for k, c in children.items() if k.startswith("ConfigMap/")}
    return {
        key: kubeenv.resolve(container, maps)
        for key, pod in children.items()
        if key.startswith("Pod/")
        for container in pod["spec"]["containers"]
    }


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "configmap"])
def test_dollar_text_reaches_every_process_as_written(
    real_stack: RealStack, rest: Rest, namespace: str, inline: bool
) -> None:
    """A tune job whose tuner-server-key annotation and legacy label hold `$$`, `$(VAR)` of
    a defined and an undefined variable, an unclosed `$(` and a lone `$`."""
    document = _job("tune", tune_job(TEXT)["spec"])
    with without_configmaps(real_stack) if inline else nullcontext():
        job = apply_job(real_stack.apiserver, rest, namespace, document)
        processes = wait_for(lambda: _processes(job), "four pods", until=lambda p: len(p) == 4)
    maps = [k for k in job.children() if k.startswith("ConfigMap/")]
    assert len(maps) == (0 if inline else 1)
    for key, env in processes.items():
        assert json.loads(env["MX_CONFIG"])["labels"] == expected_labels(TEXT), key
    for key, pod in job.children().items():
        if key.startswith("Pod/tune-tunerserver-"):
            annotations = pod["metadata"]["annotations"]
            assert {k: annotations[k] for k in ANNOTATION} == ANNOTATION
