"""Which of training-operator's objects each MXJob claims, decided from plain dicts: an object is
claimed only where its controller ownerReference is that job's uid."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from app.core.children.builders import CONTROLLER_UID
from app.core.mxnet import names

# training-operator v1.8 labels the pods and Services of an MXJob with this operator name, the
# one the hook writes: other job kinds' children (TFJob's, ...) carry another.
SELECTOR = {names.LABEL_OPERATOR: names.OPERATOR_NAME}
FINISHED = ("Succeeded", "Failed")
ACTIVE_PHASES = ("Pending", "Running", "Unknown")


class Verdict(StrEnum):
    CLAIM = "claim"
    OURS = "already ours"
    LEFT = "left alone"


@dataclass(frozen=True)
class Job:
    """An MXJob as the takeover sees it."""

    namespace: str
    name: str
    uid: str
    # The condition type (Succeeded, Failed) that finished it, if one did.
    finished: str | None
    clean_pod_policy: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Child:
    """One object that names an MXJob in its labels, and what the takeover does with it."""

    kind: str
    namespace: str
    name: str
    uid: str
    # The job it names (`namespace/name`) and, where it is the job's, that job's uid.
    job: str
    job_uid: str | None
    verdict: Verdict
    why: str = ""
    phase: str = ""
    # Whether it has labels at all (training-operator's PodGroups have none).
    labelled: bool = True


def read_job(obj: Mapping[str, Any]) -> Job | None:
    """An MXJob from its stored form; None without a namespace, name or uid."""
    meta = obj.get("metadata") or {}
    namespace, name, uid = meta.get("namespace"), meta.get("name"), meta.get("uid")
    if not (isinstance(namespace, str) and isinstance(name, str) and isinstance(uid, str)):
        return None
    return Job(namespace, name, uid, _finished(obj.get("status")), _policy(obj.get("spec")))


def _finished(status: Any) -> str | None:
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for condition in conditions if isinstance(conditions, list) else ():
        if not isinstance(condition, dict):
            continue
        if condition.get("type") in FINISHED and condition.get("status") == "True":
            return str(condition["type"])
    return None


def _policy(spec: Any) -> str:
    """The cleanPodPolicy the hook will apply: runPolicy's, the legacy field's, else Running."""
    spec = spec if isinstance(spec, dict) else {}
    run_policy = spec.get("runPolicy") if isinstance(spec.get("runPolicy"), dict) else {}
    for value in (run_policy.get("cleanPodPolicy"), spec.get("cleanPodPolicy")):
        if isinstance(value, str) and value:
            return value
    return "Running"


def decide(jobs: Iterable[Job], kind: str, objects: Iterable[Mapping[str, Any]]) -> list[Child]:
    """What becomes of each of `objects` (of one `kind`) that names a job of `jobs` in its
    labels, in the order of the jobs, then by name."""
    by_uid = {job.uid: job for job in jobs}
    by_key = {job.key: job for job in by_uid.values()}
    found = [c for obj in objects if (c := _child(kind, obj, by_uid, by_key))]
    return sorted(found, key=lambda c: (c.job, c.name))


def _child(
    kind: str, obj: Mapping[str, Any], by_uid: dict[str, Job], by_key: dict[str, Job]
) -> Child | None:
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    labels = labels if isinstance(labels, dict) else {}
    namespace, name, uid = meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", "")
    key = f"{namespace}/{labels.get(names.LABEL_JOB, '')}"
    owner = _controller(meta.get("ownerReferences"))
    job = by_uid.get(owner.get("uid", "")) if owner and _is_mxjob(owner) else None
    if job is None and key not in by_key:
        return None
    phase = str((obj.get("status") or {}).get("phase") or "")
    verdict, why = _verdict(meta, labels, owner, job)
    job_key = job.key if job else key
    job_uid = job.uid if job else None
    return Child(kind, namespace, name, uid, job_key, job_uid, verdict, why, phase, bool(labels))


def _verdict(
    meta: Mapping[str, Any],
    labels: Mapping[str, Any],
    owner: dict[str, Any] | None,
    job: Job | None,
) -> tuple[Verdict, str]:
    if owner is None:
        return (
            Verdict.LEFT,
            "it has no controller owner (released by an earlier sync, or made by hand)",
        )
    if job is None:
        return (
            Verdict.LEFT,
            f"its controller is {owner.get('kind')} {owner.get('name')}, not this job",
        )
    claimed = labels.get(CONTROLLER_UID)
    if claimed == job.uid:
        return Verdict.OURS, ""
    if claimed is not None:
        return Verdict.LEFT, f"it is labelled {CONTROLLER_UID}={claimed}, not the job's uid"
    if meta.get("deletionTimestamp"):
        return Verdict.LEFT, "it is being deleted"
    return Verdict.CLAIM, ""


def _controller(refs: Any) -> dict[str, Any] | None:
    for ref in refs if isinstance(refs, list) else ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def _is_mxjob(ref: Mapping[str, Any]) -> bool:
    return ref.get("kind") == "MXJob" and str(ref.get("apiVersion", "")).startswith("kubeflow.org/")


def claim_patch(child: Child) -> list[dict[str, Any]]:
    """The JSON patch that claims `child` for its job: only the object listed (its uid tested,
    so a replacement under the same name is refused), only the one label added."""
    assert child.job_uid is not None
    label = (
        {"op": "add", "path": f"/metadata/labels/{CONTROLLER_UID}", "value": child.job_uid}
        if child.labelled
        else {"op": "add", "path": "/metadata/labels", "value": {CONTROLLER_UID: child.job_uid}}
    )
    return [{"op": "test", "path": "/metadata/uid", "value": child.uid}, label]


def removed_when_finished(job: Job, children: Iterable[Child]) -> list[Child]:
    """The claimed pods of a finished job that the hook removes at its first sync, as the
    job's cleanPodPolicy says (docs/lifecycle.md): what a dry run warns of."""
    if job.finished is None or job.clean_pod_policy == "None":
        return []
    pods = [c for c in children if c.kind == "pod" and c.job_uid == job.uid]
    pods = [c for c in pods if c.verdict is not Verdict.LEFT]
    if job.clean_pod_policy == "All":
        return pods
    return [c for c in pods if c.phase in ACTIVE_PHASES or not c.phase]


def operator_problems(webhooks: list[str], deployment: Mapping[str, Any] | None) -> list[str]:
    """Why training-operator may still run MXJobs, as the guide's step 2 leaves it: its MXJob
    webhook entry, a Deployment that enables `mxjob`, or one whose restart is not rolled out
    (an old pod of it may still make pods). Empty when it is stopped."""
    problems = [f"its MXJob webhook entry {hook} is still registered" for hook in webhooks]
    if deployment is None:
        return problems
    spec = deployment.get("spec") or {}
    status = deployment.get("status") or {}
    wanted = spec.get("replicas", 1)
    if wanted == 0 and not status.get("replicas"):
        return problems
    kinds = enabled_schemes(spec)
    if not kinds or "mxjob" in kinds:
        which = "every job kind" if not kinds else "mxjob"
        problems.append(f"its Deployment enables {which} (no --enable-scheme leaves mxjob out)")
    generation = (deployment.get("metadata") or {}).get("generation", 0)
    updated = status.get("updatedReplicas", 0)
    if (
        status.get("observedGeneration", 0) < generation
        or updated < wanted
        or (status.get("replicas", 0) > updated)
    ):
        problems.append("its Deployment's rollout is not finished (an old pod may still run)")
    return problems


def enabled_schemes(spec: Mapping[str, Any]) -> list[str]:
    """The job kinds the first container's `--enable-scheme` arguments name."""
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or [{}]
    args = [str(a) for a in containers[0].get("args") or []]
    kinds = []
    for i, arg in enumerate(args):
        # Go's flag package: one dash or two, the value after `=` or as the next argument.
        flag, equals, value = arg.lstrip("-").partition("=")
        if arg.startswith("-") and flag == "enable-scheme":
            kinds.append(value if equals else (args[i + 1] if i + 1 < len(args) else ""))
    return kinds
