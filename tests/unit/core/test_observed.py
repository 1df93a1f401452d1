"""The job's observed pods, read once a sync (app/core/observe/replicas.py): each as an attempt of its
replica index with how they read the job's ConfigMap, and every replica index of the spec with
its attempts, the Services read only where needed."""

from typing import Any

from app.core.model.spec import ReplicaType
from app.core.mxnet.layout import ConfigMapUse
from app.core.observe import replicas
from app.core.observe.pods import observe
from app.core.validate.validation import validated_spec
from tests.support.jobs import created, mxjob, pods_of, request, services_of, train_spec
from tests.support.jobs import observed as as_observed

WHOLE = ConfigMapUse(env_from=True)


def _running_job() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A job's pods (one of them a stranger's) and Services, as a sync request carries them."""
    with_config_map: dict[str, list[dict[str, Any]]] = {"ConfigMap.v1": []}
    answer = created(request(mxjob(train_spec(servers=1, workers=2)), others=with_config_map))
    other = created(request(mxjob(train_spec(), name="other"), others=with_config_map))
    stranger = as_observed(pods_of(other)[0])
    pods = {p["metadata"]["name"]: as_observed(p) for p in pods_of(answer)}
    return pods | {"other-scheduler-0": stranger}, [as_observed(s) for s in services_of(answer)]


def test_the_pods_are_read_once_as_attempts_of_the_job() -> None:
    pods, _ = _running_job()
    read = replicas.read_pods(pods, "mnist")
    assert read.attempts == observe(pods.values(), "mnist")
    assert [a.name for a in read.attempts] == [
        "mnist-scheduler-0",
        "mnist-server-0",
        "mnist-worker-0",
        "mnist-worker-1",
    ]
    assert read.config_map_use == WHOLE


def test_the_services_are_read_only_for_an_index_without_a_pod() -> None:
    pods, services = _running_job()
    spec = validated_spec("mnist", train_spec(servers=1, workers=2))
    reads: list[None] = []

    def read_services() -> list[dict[str, Any]]:
        reads.append(None)
        return services

    everyone = replicas.owned(replicas.read_pods(pods, "mnist"), read_services, "mnist", spec)
    assert [(r.rtype, r.index, len(r.attempts)) for r in everyone.replicas] == [
        (ReplicaType.SCHEDULER, 0, 1),
        (ReplicaType.SERVER, 0, 1),
        (ReplicaType.WORKER, 0, 1),
        (ReplicaType.WORKER, 1, 1),
    ]
    assert reads == []
    del pods["mnist-worker-1"]
    after = replicas.owned(replicas.read_pods(pods, "mnist"), read_services, "mnist", spec)
    assert (after.replicas[3].attempts, after.replicas[3].recorded) == ((), (0, 0))
    assert reads == [None]
