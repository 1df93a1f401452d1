"""The customize hook (app/integrations/kueue/hook.py): the related objects a job's sync is sent
with, and no answer for what is not a customize request."""

from typing import Any

import pytest

from app.integrations import kueue


@pytest.mark.parametrize(
    ("body", "answer"),
    [
        pytest.param(
            {"controller": {}, "parent": {"metadata": {"name": "j"}}},
            {"relatedResources": [dict(r) for r in kueue.RELATED_RESOURCES]},
            id="no-namespace",
        ),
        pytest.param(
            {"controller": {}, "parent": {"metadata": {"name": "j", "namespace": "team"}}},
            {
                "relatedResources": [
                    *(dict(r) for r in kueue.RELATED_RESOURCES),
                    {"apiVersion": "v1", "resource": "namespaces", "names": ["team"]},
                    {
                        "apiVersion": "kueue.x-k8s.io/v1beta2",
                        "resource": "localqueues",
                        "namespace": "team",
                        "names": ["default"],
                    },
                ]
            },
            id="namespaced-job",
        ),
        pytest.param({"controller": {}}, None, id="no-parent"),
        pytest.param([], None, id="not-an-object"),
        pytest.param({"parent": "x"}, None, id="parent-not-an-object"),
    ],
)
def test_customize(body: Any, answer: dict[str, Any] | None) -> None:
    assert kueue.customize(body) == answer
