"""A queued job's whole life in a simulated cluster, Kueue's Workload status written by the test:
queued, admitted, preempted, requeued and admitted again, to Succeeded."""

import copy
from typing import Any

import pytest

from tests.support.jobs import replica as replica_spec
from tests.support.kueue_jobs import (
    FLAVORS,
    WL,
    labelled,
    related,
    wl_status,
)
from tests.support.simcluster import SimCluster

# The Workload's status as Kueue writes it: admitted to the ClusterQueue `cq` on flavor
# on-a, then preempted.
ADMITTED = wl_status(
    ("QuotaReserved", "True", "QuotaReserved", "reserved"),
    ("Admitted", "True", "Admitted", "admitted"),
    queue="cq",
    assign=[{"name": "worker", "flavors": {"cpu": "on-a"}, "count": 1}],
)
EVICTED = copy.deepcopy(ADMITTED)
EVICTED["conditions"].append(
    {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "preempted"}
)


def kueue_says(sim: SimCluster, status: dict[str, Any]) -> None:
    """Kueue writes `status` into the job's one Workload."""
    (workload,) = sim.children[WL].values()
    workload["status"] = copy.deepcopy(status)


@pytest.mark.parametrize("stale", [False, True], ids=["fresh", "stale-parent"])
def test_a_whole_life_preempted_and_requeued(stale: bool) -> None:
    """Queued, admitted, running, preempted, requeued and admitted again, to Succeeded, with
    every sync also sent on the parent as it was one status write ago (`stale`)."""
    parent = labelled({"jobMode": "MXTrain", "mxReplicaSpecs": {"Worker": replica_spec()}})
    sim = SimCluster(parent, stale=stale, child_types=("Pod.v1", "Service.v1", WL))
    sim.related = related(*FLAVORS)
    sim.sync()
    assert sim.names() == []
    assert sim.true_conditions() == {"Created": "MXJobCreated", "Queued": "MXJobQueued"}
    (name,) = sim.children[WL]
    kueue_says(sim, ADMITTED)
    sim.sync(1)
    sim.run()
    sim.sync(1)
    assert sim.true_conditions() == {"Created": "MXJobCreated", "Running": "MXJobRunning"}
    assert sim.pods()["mnist-worker-0"]["spec"]["nodeSelector"] == {"pool": "a"}
    kueue_says(sim, EVICTED)
    for _ in range(3):
        sim.sync(1)
        assert sim.true_conditions() == {"Created": "MXJobCreated", "Queued": "MXJobEvicted"}
        assert sim.names() == []
    # The evicted Workload went once the status recorded it; a new one waits, pending.
    assert f"{WL}/{name}" in sim.deleted
    assert sim.children[WL][name].get("status") is None
    kueue_says(sim, ADMITTED)
    sim.sync(1)
    sim.run()
    sim.sync(1)
    assert sim.names() == ["mnist-worker-0"]
    sim.exit("mnist-worker-0", 0)
    sim.sync(1)
    sim.sync(1)
    assert sim.true_conditions()["Succeeded"] == "MXJobSucceeded"
    assert sim.names(WL) == []
    assert "Restarting" not in {c["type"] for c in sim.answer["status"]["conditions"]}
