"""The children a job should have this sync, following the decision: its pods and Services by
replica index and attempt, and the children one of each per job that go ahead of them."""

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from app.core.children import builders
from app.core.model.seam import Contribution, Decision, Reports, add_to_pod, reports_of
from app.core.model.spec import CleanPodPolicy, MXJobSpec
from app.core.model.values import parse_time, seconds_until
from app.core.observe.pods import Attempt
from app.core.observe.replicas import ObservedReplicas, Replica

Child = dict[str, Any]


def desired_children(
    job: builders.JobContext,
    owned: ObservedReplicas,
    decision: Decision,
    now: datetime,
    contributions: Sequence[Contribution] = (),
) -> tuple[list[Child], int]:
    """The children the job should have, and the resync delay its timers need;
    `contributions`: the integrations' parts in the sync (app/core/model/seam.py), whose
    children these do not include."""
    out, resync = _pods_and_services(job, owned, decision, now, reports_of(contributions))
    out[:0] = _job_children(job, contributions) if out else []
    return out, resync


def _pods_and_services(
    job: builders.JobContext,
    owned: ObservedReplicas,
    decision: Decision,
    now: datetime,
    reports: Reports,
) -> tuple[list[Child], int]:
    if not decision.finished:
        if job.spec.runPolicy.suspend or reports.wait:
            return [], 0
        return _while_running(job, owned.replicas, reports), decision.resync_after
    if decision.finishing:
        return _of_attempts(job, owned.attempts, owned.replicas), 0
    ttl_left = _ttl_left(job.spec, decision, now)
    if ttl_left == 0:
        return [], 0
    left = [a for a in owned.attempts if _survives_cleanup(decision.cleanup, a)]
    return _of_attempts(job, left, owned.replicas), ttl_left or 0


def _job_children(job: builders.JobContext, contributions: Sequence[Contribution]) -> list[Child]:
    """One of each per job, while it has pods, ahead of them in the answer: the integrations'
    (a gang scheduler's PodGroup) and the ConfigMap the pods read MX_CONFIG's shared parts from
    (Metacontroller applies child types in its own order: docs/behaviour.md#children)."""
    out = [child for c in contributions for child in c.job_children()]
    if job.reads.config_map:
        out.append(builders.config_map(job))
    return out


def _while_running(
    job: builders.JobContext,
    replicas: list[Replica],
    reports: Reports,
) -> list[Child]:
    """The pods and Services of a running job, in the answer's order: every pod, then every
    Service the job has (`JobContext.services`)."""
    pods: list[Child] = []
    services = []
    for replica in replicas:
        first = len(pods)
        going_on = replica.going_on()
        if going_on is not None:
            # The usual case: one pod, which goes on as it is.
            attempt, restarts = going_on.attempt, going_on.restarts_before
            pods.append(builders.pod(job, replica.rtype, replica.index, attempt, restarts))
        else:
            attempt, restarts = replica.next_attempt
            wanted = {a.attempt: a.restarts_before for a in replica.keep_while_running()}
            wanted.setdefault(attempt, restarts)
            pods += [
                builders.pod(job, replica.rtype, replica.index, n, r)
                for n, r in sorted(wanted.items())
            ]
        for update in reports.pod_updates(replica.rtype):
            for built in pods[first:]:
                add_to_pod(built, update)
        if job.has_service(replica.rtype):
            services.append(builders.service(job, replica.rtype, replica.index, attempt, restarts))
    return pods + services


def _of_attempts(
    job: builders.JobContext, attempts: Iterable[Attempt], replicas: list[Replica]
) -> list[Child]:
    """Pods for these observed attempts, and the Services of their replicas that the job
    has."""
    wanted = {(r.rtype, r.index) for r in replicas}
    ours = [a for a in attempts if (a.rtype, a.index) in wanted]
    pods = [builders.pod(job, a.rtype, a.index, a.attempt, a.restarts_before) for a in ours]
    with_pods = {(a.rtype, a.index) for a in ours}
    services = []
    for replica in replicas:
        if (replica.rtype, replica.index) in with_pods and job.has_service(replica.rtype):
            attempt, restarts = replica.next_attempt
            services.append(builders.service(job, replica.rtype, replica.index, attempt, restarts))
    return pods + services


def _survives_cleanup(policy: CleanPodPolicy, attempt: Attempt) -> bool:
    """Whether a finished job's clean-up (`Decision.cleanup`) leaves this pod."""
    if policy is CleanPodPolicy.ALL:
        return False
    return policy is CleanPodPolicy.NONE or attempt.phase in ("Succeeded", "Failed")


def _ttl_left(spec: MXJobSpec, decision: Decision, now: datetime) -> int | None:
    """Seconds until the finished job's children expire; None without a TTL."""
    ttl = spec.runPolicy.ttlSecondsAfterFinished
    completed = parse_time(decision.completion_time)
    if ttl is None or completed is None:
        return None
    return seconds_until(completed, ttl, now)
