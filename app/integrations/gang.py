"""Gang scheduling: one PodGroup per job when Metacontroller declares a PodGroup child type."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.core.model import kinds
from app.core.model.envelope import SyncRequest
from app.core.model.seam import ContributionDefaults, Integration, SyncInputs
from app.core.model.spec import MXJobSpec
from app.core.mxnet import names

POD_GROUP = "PodGroup"


@dataclass(frozen=True)
class GangScheduler:
    """A batch scheduler's PodGroup API and how its pods name their group."""

    api_version: str
    scheduler_name: str
    group_annotation: str | None = None
    group_label: str | None = None

    @property
    def child_type(self) -> str:
        """The PodGroup child type a CompositeController declares for this scheduler."""
        return kinds.child_type(POD_GROUP, self.api_version)


VOLCANO = GangScheduler(
    api_version="scheduling.volcano.sh/v1beta1",
    scheduler_name="volcano",
    group_annotation="scheduling.k8s.io/group-name",
)
SCHEDULER_PLUGINS = GangScheduler(
    api_version="scheduling.x-k8s.io/v1alpha1",
    scheduler_name="scheduler-plugins-scheduler",
    group_label="scheduling.x-k8s.io/pod-group",
)
KNOWN = (VOLCANO, SCHEDULER_PLUGINS)


def declared(declares: Callable[[str], bool]) -> GangScheduler | None:
    """The gang scheduler whose PodGroup type the controller `declares` (Volcano first)."""
    return next((g for g in KNOWN if declares(g.child_type)), None)


def pod_group(
    gang: GangScheduler, name: str, namespace: str | None, spec: MXJobSpec
) -> dict[str, Any]:
    """The job's PodGroup: all of its pods are scheduled together or not at all."""
    policy = spec.runPolicy.schedulingPolicy
    total = sum(r.replicas for r in spec.mxReplicaSpecs.values())
    group: dict[str, Any] = {
        "minMember": policy.minAvailable if policy and policy.minAvailable is not None else total
    }
    if policy and policy.minResources:
        group["minResources"] = dict(policy.minResources)
    if gang is VOLCANO and policy:
        if policy.queue:
            group["queue"] = policy.queue
        if policy.priorityClass:
            group["priorityClassName"] = policy.priorityClass
    if gang is SCHEDULER_PLUGINS and policy and policy.scheduleTimeoutSeconds is not None:
        group["scheduleTimeoutSeconds"] = policy.scheduleTimeoutSeconds
    meta = names.metadata(name, namespace, names.job_labels(name), {})
    return kinds.header(POD_GROUP, gang.api_version) | {"metadata": meta, "spec": group}


def put_in_group(gang: GangScheduler, pod: dict[str, Any], group: str) -> None:
    """Put a freshly built pod into the job's group. A scheduler the user chose is kept."""
    pod["spec"].setdefault("schedulerName", gang.scheduler_name)
    meta = pod["metadata"]
    if gang.group_annotation:
        meta["annotations"] = meta.get("annotations", {}) | {gang.group_annotation: group}
    if gang.group_label:
        meta["labels"][gang.group_label] = group


@dataclass(frozen=True)
class GangContribution(ContributionDefaults):
    """The gang scheduler's part in one sync: every pod in the job's group, and the group
    ahead of the pods; nothing reported before the decision, nothing added after."""

    gang: GangScheduler
    request: SyncRequest
    spec: MXJobSpec
    report: None = None

    def fit_pod(self, pod: dict[str, Any]) -> None:
        """Put the pod into the job's group."""
        put_in_group(self.gang, pod, self.request.parent.metadata.name)

    def job_children(self) -> list[dict[str, Any]]:
        """The job's PodGroup."""
        meta = self.request.parent.metadata
        return [pod_group(self.gang, meta.name, meta.namespace, self.spec)]


def contribute(inputs: SyncInputs) -> GangContribution | None:
    """The gang scheduler's contribution to a sync: None unless the controller declares
    PodGroups."""
    gang = declared(inputs.request.declares)
    return GangContribution(gang, inputs.request, inputs.spec) if gang is not None else None


INTEGRATION = Integration("gang", contribute)
