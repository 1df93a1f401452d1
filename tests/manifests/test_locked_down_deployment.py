"""The hook's deployment as kustomize builds it keeps everyone else out and stays up: each
requirement of the locked-down deployment, checked on every overlay's `kubectl kustomize` output."""

from functools import cache
from typing import Any

import pytest

from app.service.settings import Settings, from_env
from tests.support import REPO
from tests.support.kustomize import hook_objects
from tests.support.quantities import mebibytes

OVERLAYS = REPO / "manifests" / "overlays"
NAMES = sorted(p.name for p in OVERLAYS.iterdir() if p.is_dir())
METACONTROLLER_NAMESPACE = "metacontroller"
# Peak resident memory of the hook answering the largest sync validation admits, measured by
# tests/apiserver/test_worst_case.py (docs/reliability.md). The limit must leave room above it.
MEASURED_PEAK_MIB = 370


@cache
def build(overlay: str) -> tuple[dict[str, Any], ...]:
    return hook_objects(overlay)


def the(overlay: str, kind: str, component: str = "sync-hook") -> dict[str, Any]:
    (found,) = [
        d
        for d in build(overlay)
        if d["kind"] == kind
        and d["metadata"].get("labels", {}).get("app.kubernetes.io/component", component)
        == component
    ]
    return found


def _pod(overlay: str) -> dict[str, Any]:
    pod: dict[str, Any] = the(overlay, "Deployment")["spec"]["template"]
    return pod


def _container(overlay: str) -> dict[str, Any]:
    container: dict[str, Any]
    (container,) = _pod(overlay)["spec"]["containers"]
    return container


def _security(overlay: str, field: str) -> Any:
    """A security setting as it applies to the container: its own, else the pod's."""
    own = _container(overlay).get("securityContext", {})
    return own.get(field, _pod(overlay)["spec"].get("securityContext", {}).get(field))


@pytest.fixture(params=NAMES)
def overlay(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_runs_as_non_root(overlay: str) -> None:
    assert _security(overlay, "runAsNonRoot") is True
    assert _security(overlay, "runAsUser") is None, "the image's or the platform's (restricted-v2)"
    assert _security(overlay, "runAsGroup") is None


def test_read_only_root_and_no_privilege(overlay: str) -> None:
    context = _container(overlay)["securityContext"]
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context.get("privileged", False) is False
    pod = _pod(overlay)["spec"]
    assert not any(pod.get(f) for f in ("hostNetwork", "hostPID", "hostIPC"))


def test_every_capability_dropped_none_added(overlay: str) -> None:
    capabilities = _container(overlay)["securityContext"]["capabilities"]
    assert capabilities["drop"] == ["ALL"]
    assert not capabilities.get("add")


def test_seccomp_runtime_default(overlay: str) -> None:
    assert _security(overlay, "seccompProfile") == {"type": "RuntimeDefault"}


def test_no_service_account_token(overlay: str) -> None:
    pod = _pod(overlay)["spec"]
    assert pod["automountServiceAccountToken"] is False
    account = the(overlay, "ServiceAccount")
    assert account["metadata"]["name"] == pod["serviceAccountName"]
    assert account["automountServiceAccountToken"] is False
    # No role for the hook (the kueue overlay's Workload-status writer has its own account).
    bindings = [d for d in build(overlay) if d["kind"] in ("RoleBinding", "ClusterRoleBinding")]
    subjects = [s.get("name") for b in bindings for s in b.get("subjects") or []]
    assert account["metadata"]["name"] not in subjects, bindings


def test_requests_and_limits_fit_the_largest_accepted_sync(overlay: str) -> None:
    resources = _container(overlay)["resources"]
    for bound in ("requests", "limits"):
        assert set(resources[bound]) == {"cpu", "memory"}
    assert mebibytes(resources["limits"]["memory"]) >= 2 * MEASURED_PEAK_MIB
    # The peak was measured with bodies up to the default limit; a larger one needs more.
    env = {e["name"]: e.get("value") for e in _container(overlay).get("env", [])}
    body_limit = int(env.get("MXJOB_MAX_BODY_BYTES") or Settings().max_body_bytes)
    assert body_limit <= 64 * 2**20


def test_probes_use_healthz(overlay: str) -> None:
    container = _container(overlay)
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["path"] == "/healthz"
        assert container[probe]["httpGet"]["port"] in ("http", 8080)


def test_two_replicas_spread_over_nodes_and_kept_through_drains(overlay: str) -> None:
    deployment = the(overlay, "Deployment")
    labels = _pod(overlay)["metadata"]["labels"]
    assert deployment["spec"]["replicas"] >= 2
    (spread,) = _pod(overlay)["spec"]["topologySpreadConstraints"]
    assert spread["topologyKey"] == "kubernetes.io/hostname"
    assert spread["maxSkew"] == 1
    assert spread["labelSelector"]["matchLabels"].items() <= labels.items()
    budget = the(overlay, "PodDisruptionBudget")["spec"]
    assert budget["maxUnavailable"] == 1
    assert budget["selector"]["matchLabels"].items() <= labels.items()


def test_only_metacontroller_namespace_may_connect(overlay: str) -> None:
    policy = the(overlay, "NetworkPolicy")["spec"]
    assert (
        policy["podSelector"]["matchLabels"].items() <= _pod(overlay)["metadata"]["labels"].items()
    )
    assert "Ingress" in policy["policyTypes"]
    for rule in policy["ingress"]:
        assert rule["from"] == [
            {
                "namespaceSelector": {
                    "matchLabels": {"kubernetes.io/metadata.name": METACONTROLLER_NAMESPACE}
                }
            }
        ]
        assert rule["ports"] == [{"protocol": "TCP", "port": "http"}]


def test_shutdown_grace_outlasts_a_sync(overlay: str) -> None:
    """SIGTERM lets the sync in flight finish (tests/http/test_server_lifecycle.py); Kubernetes
    must wait at least as long as Metacontroller waits for an answer."""
    grace = _pod(overlay)["spec"].get("terminationGracePeriodSeconds", 30)
    controller = the(overlay, "CompositeController", "composite-controller")
    timeout = controller["spec"]["hooks"]["sync"]["webhook"].get("timeout", "10s")
    assert grace > int(timeout.removesuffix("s"))


def test_the_clock_is_never_frozen_in_a_cluster(overlay: str) -> None:
    env = [e["name"] for e in _container(overlay).get("env", [])]
    assert "MXJOB_FROZEN_CLOCK" not in env


def test_the_hook_drops_work_when_metacontroller_stops_waiting(overlay: str) -> None:
    """The hook's webhook timeout (work queued longer is dropped, read and send deadlines
    are fractions of it) is the CompositeController's; a shorter one would drop answers
    Metacontroller still waits for."""
    controller = the(overlay, "CompositeController", "composite-controller")
    timeout = controller["spec"]["hooks"]["sync"]["webhook"].get("timeout", "10s")
    env = {e["name"]: e.get("value") for e in _container(overlay).get("env", [])}
    config = from_env({k: v for k, v in env.items() if v is not None})
    assert config.webhook_timeout_seconds == float(timeout.removesuffix("s"))
    assert config.read_chunk_seconds < config.read_seconds < config.webhook_timeout_seconds
    assert config.send_seconds <= config.webhook_timeout_seconds
