"""The takeover's calls to the API server (lightkube), each failure one line that says what to
do: which permission a refusal lacks, which object changed meanwhile."""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
from lightkube import ALL_NS, ApiError, Client
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.admissionregistration_v1 import ValidatingWebhookConfiguration
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Pod, Service
from lightkube.types import PatchType

from app.controllers.takeover.plan import SELECTOR, Child

MXJob = create_namespaced_resource("kubeflow.org", "v1", "MXJob", "mxjobs")
# The PodGroups training-operator v1.8 makes for gang scheduling (`--gang-scheduler-name`), by
# the name the takeover prints.
PODGROUPS = {
    "podgroup.scheduling.volcano.sh": create_namespaced_resource(
        "scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups"
    ),
    "podgroup.scheduling.x-k8s.io": create_namespaced_resource(
        "scheduling.x-k8s.io", "v1alpha1", "PodGroup", "podgroups"
    ),
}
RESOURCES: dict[str, Any] = {"pod": Pod, "service": Service, **PODGROUPS}
PLURALS = {"pod": "pods", "service": "services", **dict.fromkeys(PODGROUPS, "podgroups")}
# training-operator v1.8's MXJob entry in its ValidatingWebhookConfiguration.
MXJOB_WEBHOOK = "validator.mxjob.training-operator.kubeflow.org"


class TakeoverError(Exception):
    """A failure that stops the takeover, in one line."""


class Changed(Exception):
    """The object is gone or was replaced since it was listed (the API server's message): the
    next listing sees what it is now."""


@contextmanager
def asking(verb: str, resource: str, namespace: str | None = None) -> Iterator[None]:
    """API failures inside, as one TakeoverError line naming `verb` on `resource`."""
    where = f" in namespace {namespace}" if namespace else " in every namespace"
    try:
        yield
    except ApiError as err:
        code, message = err.status.code, err.status.message
        if code == 403:
            raise TakeoverError(
                f"forbidden: the takeover needs '{verb}' on {resource}{where} ({message})"
            ) from None
        if code == 401:
            raise TakeoverError(f"the API server refused the credentials: {message}") from None
        raise TakeoverError(f"{verb} {resource}{where}: {message} (HTTP {code})") from None
    except httpx2.HTTPError as err:
        raise TakeoverError(f"cannot reach the API server ({verb} {resource}): {err}") from None


def jobs(client: Client, namespace: str | None) -> list[dict[str, Any]]:
    """Every MXJob in `namespace`, or in all of them."""
    with asking("list", "mxjobs.kubeflow.org", namespace):
        return [_plain(job) for job in client.list(MXJob, namespace=namespace or ALL_NS)]


def children(client: Client, kind: str, namespace: str | None) -> list[dict[str, Any]]:
    """The objects of `kind` that carry training-operator's MXJob labels (every PodGroup); none
    of a PodGroup kind whose API the cluster does not serve (404)."""
    with asking("list", _resource(kind), namespace):
        try:
            # training-operator labels pods and Services, not PodGroups (named after the job).
            labels: dict[str, Any] | None = None if kind in PODGROUPS else dict(SELECTOR)
            listing = client.list(RESOURCES[kind], namespace=namespace or ALL_NS, labels=labels)
            return [_plain(obj) for obj in listing]
        except httpx2.HTTPStatusError as err:
            # An API that is not served answers 404 with no Status body (not an ApiError).
            if kind in PODGROUPS and err.response.status_code == 404:
                return []
            raise


def claim(client: Client, child: Child, patch: list[dict[str, Any]]) -> None:
    """Apply `patch` to `child`; Changed if it is gone or is another object by now."""
    with asking("patch", _resource(child.kind), child.namespace):
        try:
            client.patch(RESOURCES[child.kind], child.name, patch, namespace=child.namespace,
                         patch_type=PatchType.JSON)  # fmt: skip
        except ApiError as err:
            # Gone (404), or a failed `test` of the uid: another object of the name (409, 422).
            if err.status.code in (404, 409, 422):
                raise Changed(err.status.message) from None
            raise


@dataclass(frozen=True)
class Operator:
    """training-operator as the cluster shows it: its MXJob webhook entries, its Deployment."""

    webhooks: list[str]
    deployment: dict[str, Any] | None


def operator(client: Client, namespace: str, name: str) -> Operator:
    """training-operator's MXJob webhook entries and its Deployment (None if there is none)."""
    with asking("list", "validatingwebhookconfigurations.admissionregistration.k8s.io"):
        configurations = list(client.list(ValidatingWebhookConfiguration))
    found = [
        f"{conf.metadata.name if conf.metadata else '?'}/{hook.name}"
        for conf in configurations
        for hook in conf.webhooks or []
        if hook.name == MXJOB_WEBHOOK
    ]
    with asking("get", "deployments.apps", namespace):
        try:
            deployment = client.get(Deployment, name, namespace=namespace)
        except ApiError as err:
            if err.status.code == 404:
                return Operator(found, None)
            raise
    return Operator(found, _plain(deployment))


def _resource(kind: str) -> str:
    group = kind.partition(".")[2]
    return f"{PLURALS[kind]}.{group}" if group else PLURALS[kind]


def _plain(obj: Any) -> dict[str, Any]:
    plain: dict[str, Any] = obj.to_dict()
    return plain
