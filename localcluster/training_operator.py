"""Kubeflow training-operator v1.8.1 (scripts/training-operator-binary.sh: built from the Go
module proxy, its release manifests from the same module) on the loopback API server, for the
migration tests (tests/apiserver/test_migration_v1_8.py) and the side-by-side of `make bench-e2e`.

Its standalone install (`kubectl kustomize manifests/overlays/standalone` of the release) is
applied as released, with two changes a cluster does not need: the ValidatingWebhookConfiguration
calls the webhook server by a loopback URL instead of the in-cluster Service, and the webhook
certificate Secret is filled with a pair for that address (the release's cert rotator keeps a
valid pair and injects its CA into the configuration itself). The process runs out of cluster
with the arguments of the Deployment as stored (the test plays the kubelet); its certificates
are where the Deployment mounts the Secret, /tmp/k8s-webhook-server/serving-certs (a path the
release's rotator fixes): `certificates()` holds a lock on it, so that two runs on one machine
take turns instead of overwriting each other's pair."""

import base64
import datetime
import fcntl
import json
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import REPO, buildscript
from .apiserver import ApiServer
from .errors import ClusterError
from .pki import webhook_pki
from .ports import free_ports
from .processes import http_ok, running, wait_until

SCRIPT = REPO / "scripts" / "training-operator-binary.sh"
NAMESPACE = "kubeflow"
DEPLOYMENT = "training-operator"
WEBHOOKS = "validator.training-operator.kubeflow.org"
WEBHOOK_KIND = "validatingwebhookconfiguration"
MXJOB_WEBHOOK = "validator.mxjob.training-operator.kubeflow.org"
SECRET = "training-operator-webhook-cert"
CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")  # pkg/cert/cert.go, certDir
CERT_LOCK = Path("/tmp/k8s-webhook-server.lock")
USER_AGENT = "training-operator/"  # client-go's default: the binary's name


@dataclass(frozen=True)
class Release:
    binary: Path
    manifests: Path


def obtain(progress: Callable[[str], None]) -> Release:
    """Build or find training-operator v1.8.1 and its release manifests."""
    try:
        found = buildscript.run(SCRIPT, [], progress)
        return Release(found["TRAINING_OPERATOR"], found["TRAINING_OPERATOR_MANIFESTS"])
    except buildscript.BuildScriptError as error:
        raise ClusterError(str(error)) from None
    except KeyError:
        raise ClusterError(f"{SCRIPT} printed no TRAINING_OPERATOR=<path>") from None


def release_objects(server: ApiServer, release: Release) -> list[dict[str, Any]]:
    """The standalone install as released (`kubectl kustomize`)."""
    built = server.kubectl("kustomize", str(release.manifests / "overlays" / "standalone"))
    return [d for d in yaml.safe_load_all(built.stdout) if d]


def loopback(webhooks: dict[str, Any], port: int) -> dict[str, Any]:
    """The ValidatingWebhookConfiguration calling the webhook server on 127.0.0.1:`port`."""
    for webhook in webhooks["webhooks"]:
        service = webhook["clientConfig"].pop("service")
        webhook["clientConfig"]["url"] = f"https://127.0.0.1:{port}{service['path']}"
    return webhooks


def install(server: ApiServer, release: Release, port: int) -> None:
    """Apply the release's standalone install (client-side, as its README says), its
    webhooks pointed at the loopback port, and fill the certificate Secret."""
    objects = release_objects(server, release)
    for document in objects:
        if document["kind"] == "ValidatingWebhookConfiguration":
            loopback(document, port)
    crds = [d for d in objects if d["kind"] == "CustomResourceDefinition"]
    server.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(crds))
    server.wait_established(*[f"crd/{d['metadata']['name']}" for d in crds])
    rest = [d for d in objects if d["kind"] != "CustomResourceDefinition"]
    server.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(rest))
    pair = webhook_pki(
        "training-operator-ca",
        (f"training-operator.{NAMESPACE}.svc",),
        datetime.timedelta(days=365),  # past the rotator's 90-day look-ahead
    )
    data = {"ca.crt": pair.ca_cert, "ca.key": pair.ca_key, "tls.crt": pair.cert,
            "tls.key": pair.key}  # fmt: skip
    encoded = {key: base64.b64encode(value).decode() for key, value in data.items()}
    server.kubectl(
        "patch", "secret", SECRET, f"-n={NAMESPACE}", "--type=merge",
        "-p", yaml.safe_dump({"data": encoded}),
    )  # fmt: skip
    mount(server)


def mount(server: ApiServer) -> None:
    """What the kubelet does for the Deployment's `cert` volume: the Secret's keys as files."""
    secret = server.get("secret", SECRET, f"-n={NAMESPACE}")
    CERT_DIR.mkdir(parents=True, exist_ok=True)
    for key, value in secret["data"].items():
        (CERT_DIR / key).write_bytes(base64.b64decode(value))


def unmount() -> None:
    shutil.rmtree(CERT_DIR.parent, ignore_errors=True)


@contextmanager
def certificates() -> Iterator[None]:
    """The fixed certificate directory held for this run (another waits for it), removed on
    the way out."""
    with CERT_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            unmount()


def deployment_args(server: ApiServer) -> list[str]:
    """The training-operator container's arguments in the stored Deployment."""
    deployment = server.get("deployment", DEPLOYMENT, f"-n={NAMESPACE}")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return list(container.get("args") or [])


def rolled_out(server: ApiServer) -> None:
    """The Deployment's status as the Deployment controller writes it once a rollout is done:
    no Deployment controller runs here (the process is started by hand), and the takeover
    waits for the rollout of training-operator's restart."""
    generation = server.get("deployment", DEPLOYMENT, f"-n={NAMESPACE}")["metadata"]["generation"]
    status = {"observedGeneration": generation, "replicas": 1, "updatedReplicas": 1,
              "readyReplicas": 1, "availableReplicas": 1}  # fmt: skip
    server.kubectl(
        "patch", "deployment", DEPLOYMENT, f"-n={NAMESPACE}", "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip


@dataclass(frozen=True)
class Process:
    log: Path
    process: subprocess.Popen[bytes]
    args: tuple[str, ...]
    metrics_url: str = ""


@contextmanager
def run(
    release: Release, server: ApiServer, workdir: Path, webhook_port: int, args: list[str]
) -> Iterator[Process]:
    """training-operator out of cluster with the Deployment's `args`, ready (certificates
    in place, webhook server serving)."""
    health, metrics = [p for p in free_ports(3) if p != webhook_port][:2]
    log = workdir / f"training-operator-{health}.log"
    command = [
        str(release.binary), *args, f"--webhook-server-port={webhook_port}",
        f"--health-probe-bind-address=127.0.0.1:{health}",
        f"--metrics-bind-address=127.0.0.1:{metrics}",
    ]  # fmt: skip
    # The Deployment's environment: its namespace (where the certificate Secret is).
    env = ["env", f"KUBECONFIG={server.kubeconfig}", f"MY_POD_NAMESPACE={NAMESPACE}"]
    urls = [w["clientConfig"]["url"] for w in server.get(WEBHOOK_KIND, WEBHOOKS)["webhooks"]]
    # A loopback probe of the process started here: its certificate is not checked.
    unchecked = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    unchecked.check_hostname, unchecked.verify_mode = False, ssl.CERT_NONE
    with running([*env, *command], log) as process:
        ready = f"http://127.0.0.1:{health}/readyz"
        wait_until(lambda: http_ok(ready), process, log, "training-operator")
        # Ready before its webhooks are registered: their paths are 404s for a moment, and the
        # API server refuses MXJob writes meanwhile ("could not find the requested resource").
        served = lambda: all(webhook_served(url, unchecked) for url in urls)  # noqa: E731
        wait_until(served, process, log, "its webhooks")
        yield Process(log, process, tuple(args), f"http://127.0.0.1:{metrics}/metrics")


def webhook_served(url: str, context: ssl.SSLContext) -> bool:
    """Whether the webhook server has a handler at `url`: an empty review gets an answer, not
    a 404."""
    request = urllib.request.Request(url, b"{}", {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5, context=context):
            return True
    except urllib.error.HTTPError as error:
        return error.code != 404
    except (urllib.error.URLError, OSError):
        return False


def writes(audit_log: Path, since: int = 0) -> list[dict[str, Any]]:
    """Every write request training-operator made (by its user agent), from line `since` of
    the audit log on."""
    found = []
    with audit_log.open() as lines:
        for number, line in enumerate(lines):
            if number < since:
                continue
            event = json.loads(line)
            if not str(event.get("userAgent", "")).startswith(USER_AGENT):
                continue
            if event["verb"] in ("create", "update", "patch", "delete", "deletecollection"):
                found.append(event)
    return found


def audit_lines(audit_log: Path) -> int:
    with audit_log.open() as lines:
        return sum(1 for _ in lines)
