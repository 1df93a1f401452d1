"""What the core tells the web layer about a sync: the job, its replica count, and whether
its spec is invalid, beside the answer itself."""

from typing import Any

import pytest

from app.core.reconcile import sync, sync_result
from tests.support import jobs as s

BROKEN = {"mxReplicaSpecs": {"Worker": {"replicas": -1, "template": {}}}}


@pytest.mark.parametrize(
    ("parent", "replicas", "invalid"),
    [
        pytest.param(s.mxjob(s.train_spec(2, 3)), 6, False, id="valid"),
        pytest.param(s.mxjob(BROKEN), 0, True, id="invalid-spec"),
    ],
)
def test_the_result_names_the_job_its_replicas_and_outcome(
    parent: dict[str, Any], replicas: int, invalid: bool
) -> None:
    request = s.request(parent)
    result = sync_result(request, s.NOW)
    assert (result.namespace, result.name) == ("default", "mnist")
    assert (result.replicas, result.invalid_spec) == (replicas, invalid)
    assert result.answer == sync(request, s.NOW)
