"""The writer's loop: watch the Workloads the hook made and their jobs' pods, and patch each
Workload's status as `changes` says, one job at a time, on every change; each relist and each
retry of a job after a wait that grows while its failures go on (app/controllers/backoff.py)."""

import logging
import queue
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from lightkube import ALL_NS, ApiError, Client
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.core_v1 import Pod
from lightkube.types import PatchType
from prometheus_client import CollectorRegistry, Counter

from app.controllers.backoff import Backoff
from app.controllers.kueuestatus import changes
from app.core.model import kinds
from app.core.mxnet import names
from app.integrations.kueue import API_VERSION, GROUP

LOG = logging.getLogger("mxjob.kueue-status")
FIELD_MANAGER = "mxjob-controller-kueue-status"
Workload = create_namespaced_resource(GROUP, API_VERSION.split("/")[1], "Workload", "workloads")
# Only what the hook made: its Workloads and its pods carry the operator label.
SELECTOR: dict[str, Any] = {names.LABEL_OPERATOR: names.OPERATOR_NAME}
# (namespace, job name)
JobKey = tuple[str, str]
KINDS = ("Workload", "Pod")

REGISTRY = CollectorRegistry()
WRITES = Counter(
    "mxjob_kueue_status_writes",
    "Workload status patches, by outcome: patched, skipped (the Workload gone or changed "
    "meanwhile: the next event brings it again), error (tried again after a backoff).",
    ["outcome"],
    registry=REGISTRY,
)
WATCH_FAILURES = Counter(
    "mxjob_kueue_status_watch_failures",
    "Lists or watches that failed, by kind (Workload, Pod); each is listed again after a backoff.",
    ["kind"],
    registry=REGISTRY,
)


class Cache:
    """The latest Workload and pods of each job, as the watches last reported them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.workloads: dict[JobKey, dict[str, Any]] = {}
        self.pods: dict[JobKey, dict[str, dict[str, Any]]] = {}

    def replace(self, kind: str, objects: list[dict[str, Any]]) -> set[JobKey]:
        """Forget every object of `kind` and hold these (after a fresh list)."""
        with self.lock:
            touched = set(self.workloads if kind == "Workload" else self.pods)
            (self.workloads if kind == "Workload" else self.pods).clear()
        for obj in objects:
            touched |= self.update(kind, "ADDED", obj)
        return touched

    def update(self, kind: str, event: str, obj: dict[str, Any]) -> set[JobKey]:
        key = job_key(obj)
        if key is None:
            return set()
        name = obj["metadata"]["name"]
        with self.lock:
            if kind == "Workload" and event == "DELETED":
                self.workloads.pop(key, None)
            elif kind == "Workload":
                self.workloads[key] = obj
            elif event == "DELETED":
                self.pods.get(key, {}).pop(name, None)
            else:
                self.pods.setdefault(key, {})[name] = obj
        return {key}

    def job(self, key: JobKey) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        with self.lock:
            return self.workloads.get(key), list(self.pods.get(key, {}).values())


def job_key(obj: dict[str, Any]) -> JobKey | None:
    meta = obj.get("metadata") or {}
    job = (meta.get("labels") or {}).get(names.LABEL_JOB)
    namespace = meta.get("namespace")
    return (namespace, job) if isinstance(job, str) and isinstance(namespace, str) else None


def owned_by_mxjob(workload: dict[str, Any]) -> bool:
    refs = workload.get("metadata", {}).get("ownerReferences") or []
    return any(r.get("kind") == kinds.MXJOB and r.get("controller") for r in refs)


def _as_dict(obj: Any) -> dict[str, Any]:
    return obj.to_dict()  # type: ignore[no-any-return]


def follow(
    client: Client,
    res: Any,
    kind: str,
    cache: Cache,
    todo: "queue.Queue[JobKey]",
    listed: Callable[[str], None] = lambda kind: None,
) -> None:
    """List, then watch from the list's version; on any error list again (a watch that has
    missed events must not leave deleted pods in the cache), once the backoff has passed: it
    starts again from the shortest wait after an event, not after a list, so that a watch
    that fails at once does not bring a cluster-wide list a second."""
    backoff = Backoff()
    while True:
        try:
            listing = client.list(res, namespace=ALL_NS, labels=SELECTOR)
            objects = [_as_dict(o) for o in listing]
            for key in cache.replace(kind, objects):
                todo.put(key)
            LOG.info("listed %d %s objects; watching", len(objects), kind)
            listed(kind)
            events = client.watch(
                res, namespace=ALL_NS, labels=SELECTOR, resource_version=listing.resourceVersion
            )
            for event, obj in events:
                backoff.succeeded()
                for key in cache.update(kind, event, _as_dict(obj)):
                    todo.put(key)
        except Exception:  # a broken watch or list: start over from a fresh list
            WATCH_FAILURES.labels(kind).inc()
            wait = backoff.failed()
            LOG.exception("watching %s failed; listing again in %.1f s", kind, wait)
            threading.Event().wait(wait)


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def write(client: Client, cache: Cache, key: JobKey, clock: Callable[[], str] = now) -> None:
    """Bring one job's Workload status up to date; a conflict is left to the next event."""
    workload, pods = cache.job(key)
    if workload is None or not owned_by_mxjob(workload):
        return
    patch = changes.status_patch(workload, pods, clock())
    if patch is None:
        return
    name = workload["metadata"]["name"]
    try:
        client.patch(Workload.Status, name, patch, namespace=key[0],
                     patch_type=PatchType.MERGE)  # fmt: skip
    except ApiError as error:
        if error.status.code not in (404, 409):
            raise
        WRITES.labels("skipped").inc()
        return
    WRITES.labels("patched").inc()
    what = [(c["type"], c["status"], c.get("reason")) for c in patch["status"]["conditions"]]
    LOG.info("patched Workload %s/%s: %s", key[0], name, what)


def run(listed: threading.Event, client: Client | None = None) -> None:
    """Serve until killed: one thread per watch, the writes on this one; `listed` is set once
    both kinds have been listed."""
    client = client or Client(field_manager=FIELD_MANAGER)
    cache = Cache()
    todo: queue.Queue[JobKey] = queue.Queue()
    not_listed, lock = set(KINDS), threading.Lock()

    def on_listed(kind: str) -> None:
        with lock:
            not_listed.discard(kind)
            if not not_listed:
                listed.set()

    for res, kind in ((Workload, "Workload"), (Pod, "Pod")):
        args = (client, res, kind, cache, todo, on_listed)
        threading.Thread(target=follow, args=args, name=f"watch-{kind}", daemon=True).start()
    write_forever(client, cache, todo)


def write_forever(client: Client, cache: Cache, todo: "queue.Queue[JobKey]") -> None:
    """Write each job that comes; a job whose write failed comes again after its backoff."""
    retries: dict[JobKey, Backoff] = {}
    while True:
        key = todo.get()
        try:
            write(client, cache, key)
        except Exception:  # an API error: try this job again, later each time it fails
            WRITES.labels("error").inc()
            wait = retries.setdefault(key, Backoff()).failed()
            LOG.exception("writing the Workload of %s/%s failed; again in %.1f s", *key, wait)
            threading.Timer(wait, todo.put, args=(key,)).start()
        else:
            retries.pop(key, None)
