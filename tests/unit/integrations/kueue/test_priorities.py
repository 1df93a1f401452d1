"""A Workload's priority (app/integrations/kueue/priorities.py): from the job's
WorkloadPriorityClass label, its scheduling policy or its pod template, looked up in the
related objects."""

import pytest

from app.core.model.spec import MXJobSpec
from app.integrations import kueue
from tests.support.jobs import (
    train_spec,
)
from tests.support.kueue_jobs import (
    priority_class,
    related,
)


@pytest.mark.parametrize(
    ("labels", "policy", "template_class", "expected"),
    [
        pytest.param({}, None, None, None, id="none"),
        pytest.param(
            {kueue.PRIORITY_CLASS_LABEL: "urgent"},
            "high",
            None,
            kueue.Priority("WorkloadPriorityClass", "kueue.x-k8s.io", "urgent", 5000),
            id="workload-priority-class-label-first",
        ),
        pytest.param(
            {},
            None,
            "high",
            kueue.Priority("PriorityClass", "scheduling.k8s.io", "high", 1000),
            id="pod-template",
        ),
        pytest.param(
            {},
            "missing",
            None,
            kueue.Priority("PriorityClass", "scheduling.k8s.io", "missing", None),
            id="unknown-class",
        ),
    ],
)
def test_priority(
    labels: dict[str, str],
    policy: str | None,
    template_class: str | None,
    expected: kueue.Priority | None,
) -> None:
    spec = train_spec()
    if policy:
        spec["runPolicy"] = {"schedulingPolicy": {"priorityClass": policy}}
    if template_class:
        spec["mxReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] = template_class
    rel = related(
        priority_class("high", 1000),
        priority_class("urgent", 5000, kind="WorkloadPriorityClass"),
    )
    assert kueue.priority(labels, MXJobSpec.model_validate(spec), rel) == expected
