"""What a Workload's status says of its admission (app/integrations/kueue/admission.py): admitted,
evicted or waiting and why, its flavors and the admission checks' pod set updates."""

import copy
from typing import Any

import pytest

from app.core.model.spec import MXJobSpec
from app.integrations import kueue
from tests.support.jobs import (
    train_spec,
)
from tests.support.kueue_jobs import (
    ADMITTED,
    EVICTED,
    FLAVORS,
    PENDING,
    TOLERATION,
    related,
    wl_status,
)


@pytest.mark.parametrize(
    ("status", "admitted", "evicted", "message"),
    [
        pytest.param({}, False, False, "", id="no-status"),
        pytest.param({"conditions": "x", "admission": 3}, False, False, "", id="malformed"),
        pytest.param(PENDING, False, False, PENDING["conditions"][0]["message"], id="pending"),
        pytest.param(ADMITTED, True, False, "Quota reserved in ClusterQueue cq", id="admitted"),
        pytest.param(EVICTED, False, True, EVICTED["conditions"][2]["message"], id="evicted"),
        pytest.param(
            wl_status(("QuotaReserved", "True", "QuotaReserved", "reserved"), queue="cq"),
            False,
            False,
            "waiting for admission checks",
            id="quota-reserved-checks-pending",
        ),
    ],
)
def test_admission(status: dict[str, Any], admitted: bool, evicted: bool, message: str) -> None:
    state_ = kueue.admission({"status": status})
    assert (state_.admitted, state_.evicted, state_.message) == (admitted, evicted, message)


def test_admission_reads_flavors_and_pod_set_updates() -> None:
    status = copy.deepcopy(ADMITTED)
    status["admissionChecks"] = [
        {
            "name": "check",
            "state": "Ready",
            "podSetUpdates": [
                {"name": "worker", "nodeSelector": {"zone": "z1"}, "labels": {"l": "v"}}
            ],
        }
    ]
    state_ = kueue.admission({"status": status})
    assert state_.flavors == {"scheduler": ["on-b"], "server": ["on-b"], "worker": ["on-a"]}
    assert state_.cluster_queue == "cq"
    spec = MXJobSpec.model_validate(train_spec())
    infos = kueue.pod_set_infos(state_, related(*FLAVORS), spec)
    assert not isinstance(infos, str)
    worker = next(info for t, info in infos.items() if t.lowered == "worker")
    assert worker == kueue.PodSetInfo({"pool": "a", "zone": "z1"}, [TOLERATION], {"l": "v"}, {})
