"""Which of a role's rules a client needed: the requests it made, read from the API server's audit
log, asked again of the real authorizer (SubjectAccessReview) for a user bound to the role with
one rule taken out. A rule none of whose removals denies a request was not needed."""

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localcluster.apiserver import ApiServer
from localcluster.rest import Rest

AUTHORIZATION = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
RBAC = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class Request:
    """One kind of request, as the authorizer sees it."""

    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str


def requests_made(audit_log: Path, user: str) -> set[Request]:
    """Every resource request `user` made that the API server let through (an answer below
    403), once each. A watch is logged when it ends; the list before it is logged at once."""
    found = set()
    for line in audit_log.read_text().splitlines():
        event = json.loads(line)
        ref = event.get("objectRef")
        if event["user"]["username"] != user or ref is None:
            continue
        if event.get("responseStatus", {}).get("code", 200) in (401, 403):
            continue
        found.add(
            Request(
                event["verb"],
                ref.get("apiGroup", ""),
                ref["resource"],
                ref.get("subresource", ""),
                ref.get("namespace", ""),
                ref.get("name", ""),
            )
        )
    return found


@dataclass(frozen=True)
class Rule:
    """One rule of a ClusterRole, or of a Role in `namespace`."""

    namespace: str
    rule: dict[str, Any]


def rules_of(roles: Iterable[dict[str, Any]]) -> list[Rule]:
    return [Rule(r["metadata"].get("namespace", ""), x) for r in roles for x in r["rules"]]


def bind(user: str, rules: Sequence[Rule], prefix: str) -> list[dict[str, Any]]:
    """A ClusterRole and a Role per namespace holding `rules`, each bound to `user` alone."""
    documents: list[dict[str, Any]] = []
    for namespace in sorted({r.namespace for r in rules}):
        cluster = not namespace
        kind = "ClusterRole" if cluster else "Role"
        metadata = {"name": prefix} | ({} if cluster else {"namespace": namespace})
        role = {"apiVersion": f"{RBAC}/v1", "kind": kind, "metadata": metadata,
                "rules": [r.rule for r in rules if r.namespace == namespace]}  # fmt: skip
        binding = {
            "apiVersion": f"{RBAC}/v1", "kind": f"{kind}Binding", "metadata": metadata,
            "roleRef": {"apiGroup": RBAC, "kind": kind, "name": prefix},
            "subjects": [{"apiGroup": RBAC, "kind": "User", "name": user}],
        }  # fmt: skip
        documents += [role, binding]
    return documents


def allowed(rest: Rest, user: str, groups: Sequence[str], request: Request) -> bool:
    """The real authorizer's answer to `request` by `user` in `groups`."""
    attributes = {
        "verb": request.verb, "group": request.group, "resource": request.resource,
        "subresource": request.subresource, "namespace": request.namespace, "name": request.name,
    }  # fmt: skip
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": list(groups), "resourceAttributes": attributes},
    }
    return bool(rest.create(AUTHORIZATION, review)["status"].get("allowed"))


def can_i(server: ApiServer, user: str, *what: str) -> bool:
    """`kubectl auth can-i` as `user`: whether the API server's authorizer allows `what`."""
    done = server.kubectl(f"--as={user}", "auth", "can-i", *what, check=False)
    return done.stdout.strip() == "yes"
