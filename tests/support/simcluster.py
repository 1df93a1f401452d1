"""A simulated cluster for the fast whole-life tests: a TEST DOUBLE for Metacontroller and the
kubelet, in memory, with a clock the test moves.

The real Metacontroller runs these lives against a real API server in tests/apiserver
(test_real_job_life.py); this double stays because it runs in milliseconds with a fixed clock
(days of TTL in no time) and because it can force what the real stack only hits by chance:
with `stale=True` every sync is first sent with the parent status from before the last status
write, and that answer is applied too, as happens when a child's event races the status write.

What it does (Metacontroller's documented part, docs/lifecycle.md): it sends the owned children
keyed `namespace/name`, creates missing desired children, never updates an existing pod
(`OnDelete`), replaces a Service's or ConfigMap's labels, annotations, spec and data
(`InPlace`), deletes observed
children that are not desired, then writes the status. The kubelet is a script: tests set pods'
phases by name.

What it does not model:
- no API server: no admission (the CRD's schema and CEL rules are not applied, so an invalid
  spec always reaches the hook), no defaults, uids, resourceVersions, generations or
  managedFields; a new child is stored exactly as the hook returned it, with a Pending status;
- no selector or ownership: no `controller-uid` label, no ownerReferences, no adoption or
  release of children; every child of a declared type belongs to the one parent;
- no three-way merge or last-applied annotation: an in-place update is a wholesale replacement,
  and nothing tells a write that changes nothing from one that does;
- the status is stored on every sync (Metacontroller writes it only when it changed) and gets
  no `observedGeneration`;
- no watches, queues or timing: a sync happens only when the test calls `sync()` (and right
  after a staged first answer, whose status write brings the next sync); neither
  `resyncPeriodSeconds` nor the hook's `resyncAfterSeconds` schedules one; no rate limits, no
  retries or backoff, no hook errors, timeouts or outages;
- deletion is immediate: no grace period, finalizers or garbage collection;
- the kubelet sets whole pod statuses; no container restarts happen unless a test sets them."""

import copy
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from tests.support import jobs as s
from tests.support.hooked import sync


@dataclass
class SimCluster:
    parent: dict[str, Any]
    now: datetime = s.NOW
    stale: bool = False
    children: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    status: dict[str, Any] | None = None
    older_status: dict[str, Any] | None = None
    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    request: dict[str, Any] = field(default_factory=dict)
    answer: dict[str, Any] = field(default_factory=dict)
    child_types: tuple[str, ...] = ("ConfigMap.v1", "Pod.v1", "Service.v1")
    # First answers that were the status alone, each followed by the sync its write brings.
    staged: int = 0
    # What the customize hook's related resources would hand every sync.
    related: dict[str, Any] = field(default_factory=dict)

    # Metacontroller's part.

    def sync(self, after: int = 0) -> dict[str, Any]:
        """Advance the clock, then run one sync (two in stale mode) and apply the answer. A
        job's first answer, its status alone (staged), is followed at once by the sync its
        status write brings, as Metacontroller's own watch of its parents does."""
        self.now += timedelta(seconds=after)
        first = not any(self.children.values()) and not (self.status or {}).get("conditions")
        if self.stale and self.older_status != self.status:
            self._apply(sync(self._request(self.older_status), self.now), write_status=False)
        self.request = self._request(self.status)
        self.answer = sync(copy.deepcopy(self.request), self.now)
        self._apply(self.answer, write_status=True)
        if first and not self.answer["children"] and self.answer["status"].get("conditions"):
            self.staged += 1
            return self.sync()
        return self.answer

    def _request(self, status: dict[str, Any] | None) -> dict[str, Any]:
        parent = copy.deepcopy(self.parent)
        if status is not None:
            parent["status"] = copy.deepcopy(status)
        ns = parent["metadata"]["namespace"]
        request = s.envelope(
            parent,
            {
                kind: {f"{ns}/{name}": copy.deepcopy(c) for name, c in sorted(group.items())}
                for kind, group in ((k, self.children.get(k, {})) for k in self.child_types)
            },
        )
        request["related"] = copy.deepcopy(self.related)
        return request

    def _apply(self, answer: dict[str, Any], write_status: bool) -> None:
        desired = {(_kind(c), c["metadata"]["name"]): c for c in answer["children"]}
        for kind, group in self.children.items():
            for name in list(group):
                if (kind, name) not in desired:
                    del group[name]
                    self.deleted.append(f"{kind}/{name}")
        for (kind, name), child in desired.items():
            group = self.children.setdefault(kind, {})
            if name not in group:
                status = s.pod_status("Pending") if kind == "Pod.v1" else {}
                group[name] = s.observed(child, **status)
                self.created.append(f"{kind}/{name}")
            elif kind != "Pod.v1":
                for key in ("labels", "annotations"):
                    group[name]["metadata"][key] = child["metadata"].get(key, {})
                for key in ("spec", "data"):
                    if key in child:
                        group[name][key] = copy.deepcopy(child[key])
        if write_status:
            self.older_status, self.status = self.status, copy.deepcopy(answer["status"])

    # The kubelet's part.

    def pods(self) -> dict[str, dict[str, Any]]:
        return self.children.get("Pod.v1", {})

    def set_pod(self, name: str, status: dict[str, Any]) -> None:
        self.pods()[name]["status"] = status

    def run(self, *names: str) -> None:
        """Start the named pods, or every pending pod when none is named."""
        for name in names or [
            n for n, p in self.pods().items() if p["status"]["phase"] == "Pending"
        ]:
            self.set_pod(name, s.pod_status("Running"))

    def exit(self, name: str, code: int) -> None:
        phase = "Succeeded" if code == 0 else "Failed"
        self.set_pod(name, s.pod_status(phase, exit_code=code))

    def delete_by_hand(self, name: str) -> None:
        """Someone else (a user, a node drain) deletes a pod."""
        del self.pods()[name]

    def evict(self, name: str) -> None:
        self.set_pod(
            name, {"phase": "Failed", "reason": "Evicted", "message": "The node was low on memory."}
        )

    def restart_in_place(self, name: str, times: int) -> None:
        self.set_pod(name, s.pod_status("Running", restarts=times))

    # What tests look at.

    def true_conditions(self) -> dict[str, str]:
        return {
            c["type"]: c["reason"]
            for c in self.answer["status"]["conditions"]
            if c["status"] == "True"
        }

    def names(self, kind: str = "Pod.v1") -> list[str]:
        return sorted(self.children.get(kind, {}))

    def phases(self) -> dict[str, str]:
        return {n: p["status"]["phase"] for n, p in sorted(self.pods().items())}


def _kind(child: dict[str, Any]) -> str:
    return f"{child['kind']}.{child['apiVersion']}"
