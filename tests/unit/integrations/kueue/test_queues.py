"""Which LocalQueue a job queues in (app/integrations/kueue/queues.py): its label, else the
namespace's default LocalQueue, else none, and whether its namespace holds it."""

from typing import Any

import pytest

from app.integrations import kueue
from tests.support.kueue_jobs import HOLD, local_queue, namespace, related


@pytest.mark.parametrize(
    ("labels", "workloads", "objects", "expected"),
    [
        pytest.param({kueue.QUEUE_LABEL: "q"}, [], [], kueue.Queueing("q", False), id="label"),
        pytest.param(
            {kueue.QUEUE_LABEL: "q"}, [], [local_queue("default")], kueue.Queueing("q", False),
            id="label-over-default",
        ),
        pytest.param({}, [], [local_queue("default")], kueue.Queueing("default", False),
                     id="default-queue"),
        pytest.param({}, [], [local_queue("default", "elsewhere")], kueue.Queueing(None, False),
                     id="default-queue-of-another-namespace"),
        pytest.param({}, [], [local_queue("other")], kueue.Queueing(None, False),
                     id="another-queue"),
        pytest.param({}, [{"spec": {"queueName": "default"}}], [],
                     kueue.Queueing("default", False), id="default-queue-deleted-while-waiting"),
        pytest.param({}, [], [namespace(HOLD)], kueue.Queueing(None, True), id="held"),
        pytest.param({}, [], [namespace({kueue.MANAGED_NAMESPACE_LABEL: "false"})],
                     kueue.Queueing(None, False), id="label-false"),
        pytest.param({}, [], [namespace(HOLD), local_queue("default")],
                     kueue.Queueing("default", False), id="held-but-default-queue"),
        pytest.param(None, [], [], kueue.Queueing(None, False), id="no-labels"),
    ],
)  # fmt: skip
def test_queueing(
    labels: Any, workloads: list[dict[str, Any]], objects: list[dict[str, Any]], expected: Any
) -> None:
    assert kueue.queueing(labels, "default", workloads, related(*objects)) == expected
