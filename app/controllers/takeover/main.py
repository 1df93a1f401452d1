"""`mxjob-controller takeover`: the pods, Services and PodGroups that training-operator made for
each MXJob, labelled so that Metacontroller adopts them instead of releasing them
(docs/migrating-from-training-operator.md, the live switch). Run once, after training-operator
stopped handling MXJobs and before the install; any number of times, it changes nothing new."""

from collections.abc import Callable
from dataclasses import dataclass, field

from lightkube import Client

from app.controllers.takeover import cluster, plan
from app.controllers.takeover.cluster import Changed, TakeoverError
from app.controllers.takeover.plan import Child, Job, Verdict

# Listings in all: the first, and one after each pass of claims, until one finds nothing
# left to claim. With training-operator stopped the second finds nothing.
MAX_LISTINGS = 4
Say = Callable[[str], None]


@dataclass(frozen=True)
class Options:
    namespace: str | None = None
    dry_run: bool = False
    operator_namespace: str = "kubeflow"
    operator_name: str = "training-operator"
    check_operator: bool = True


@dataclass
class Tally:
    claimed: int = 0
    ours: int = 0
    left: int = 0
    # The uids whose claim was refused once (gone or replaced meanwhile, as far as it knew).
    refused: set[str] = field(default_factory=set)
    # The uids a listing found to claim: what a dry run counts.
    pending: set[str] = field(default_factory=set)
    shown: set[str] = field(default_factory=set)


def run(client: Client, options: Options, say: Say, warn: Say) -> int:
    """The takeover; 0 once every object is claimed (or, with `dry_run`, listed), 1 if
    training-operator may still run MXJobs."""
    if options.check_operator and not _operator_stopped(client, options, warn):
        return 1
    tally = Tally()
    jobs: list[Job] = []
    for _ in range(MAX_LISTINGS):
        jobs, children = _listing(client, options.namespace)
        todo = _report(jobs, children, tally, options.dry_run, say)
        if options.dry_run or not todo:
            break
        for child in todo:
            try:
                cluster.claim(client, child, plan.claim_patch(child))
            except Changed as changed:
                if child.uid in tally.refused:
                    raise TakeoverError(
                        f"{child.job}: cannot claim {child.kind} {child.name}: {changed}"
                    ) from None
                tally.refused.add(child.uid)  # the next listing sees what it is now
                continue
            tally.claimed += 1
            say(f"{child.job}: claimed {child.kind} {child.name}")
    else:
        raise TakeoverError(
            "objects to claim kept appearing after "
            f"{MAX_LISTINGS} listings: does something still make pods for MXJobs?"
        )
    done = "to claim" if options.dry_run else "claimed"
    count = len(tally.pending) if options.dry_run else tally.claimed
    say(
        f"takeover: {len(jobs)} MXJobs; {count} objects {done}, {tally.ours} already ours, "
        f"{tally.left} left alone"
    )
    return 0


def _operator_stopped(client: Client, options: Options, warn: Say) -> bool:
    where = f"{options.operator_namespace}/{options.operator_name}"
    found = cluster.operator(client, options.operator_namespace, options.operator_name)
    if found.deployment is None:
        warn(f"takeover: no Deployment {where}: make sure no training-operator runs MXJobs")
    problems = plan.operator_problems(found.webhooks, found.deployment)
    for problem in problems:
        warn(f"takeover: training-operator ({where}) may still run MXJobs: {problem}")
    if problems:
        warn("takeover: nothing changed; do step 2 of the switch first (or --no-operator-check)")
    return not problems


def _listing(client: Client, namespace: str | None) -> tuple[list[Job], list[Child]]:
    jobs = [job for obj in cluster.jobs(client, namespace) if (job := plan.read_job(obj))]
    children = [
        child
        for kind in cluster.RESOURCES
        for child in plan.decide(jobs, kind, cluster.children(client, kind, namespace))
    ]
    return jobs, children


def _report(
    jobs: list[Job], children: list[Child], tally: Tally, dry_run: bool, say: Say
) -> list[Child]:
    """Print what this listing shows for the first time; return what is left to claim."""
    todo = []
    by_job: dict[str, list[Child]] = {}
    for child in children:
        by_job.setdefault(child.job, []).append(child)
    for job in jobs:
        own = by_job.get(job.key, [])
        for child in own:
            if child.verdict is Verdict.CLAIM:
                todo.append(child)
                tally.pending.add(child.uid)
            # Once an object: a later listing shows the ones this run claimed as the job's.
            if child.uid in tally.shown:
                continue
            tally.shown.add(child.uid)
            if child.verdict is Verdict.CLAIM:
                if dry_run:
                    say(f"{job.key}: would claim {child.kind} {child.name}")
            elif child.verdict is Verdict.OURS:
                tally.ours += 1
                say(f"{job.key}: {child.kind} {child.name} is already the job's")
            else:
                tally.left += 1
                say(f"{job.key}: leaves {child.kind} {child.name} alone: {child.why}")
        if f"job:{job.uid}" not in tally.shown:
            tally.shown.add(f"job:{job.uid}")
            _job_notes(job, own, say)
    return todo


def _job_notes(job: Job, own: list[Child], say: Say) -> None:
    if not own:
        say(f"{job.key}: no pods or Services of training-operator's; nothing to claim")
    removed = plan.removed_when_finished(job, own)
    if removed:
        say(
            f"{job.key}: finished ({job.finished}): its first sync removes its "
            f"{len(removed)} pods still running (cleanPodPolicy {job.clean_pod_policy}; "
            "set it to None to keep them)"
        )
