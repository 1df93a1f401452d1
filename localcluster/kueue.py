"""The real Kueue controller beside the loopback API server.

- `obtain_kueue` runs scripts/kueue-binary.sh (the release in $KUEUE_VERSION, else its default,
  the newest tested): the binary built from sigs.k8s.io/kueue on the
  Go module proxy, and that module's CRDs (config/components/crd/bases).
- `obtain_kueue_crds` the same module's CRDs alone, nothing built (the adoption guard's test).
- `install_kueue_crds` applies those CRDs as they are (no conversion webhook: every client here,
  Kueue included, reads the storage version, v1beta2).
- `run_kueue` runs `kueue --config=...` out of cluster with the API server's kubeconfig: leader
  election off, internal cert management off, its webhook server on a free loopback port with a
  throwaway certificate (no webhook configuration points at it: the API server never calls it),
  the visibility server off. Kueue reads its metrics certificate from the fixed path
  /etc/kueue/metrics/certs whenever internal cert management is off, so it runs in a mount
  namespace of its own (`unshare --mount`, needs root, as the MXNet tier's pods) where a tmpfs on
  /etc holds one; nothing on the machine is written outside the work directory.
- `run_status_writer` runs the Workload-status writer (`python -m app kueue-status`) with the
  API server's kubeconfig.
"""

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import REPO, buildscript
from .apiserver import ApiServer
from .binaries import BUILD_TIMEOUT
from .buildscript import stop
from .errors import ClusterError
from .pki import make_pki
from .ports import free_port
from .processes import http_ok, running, wait_until

SCRIPT = REPO / "scripts" / "kueue-binary.sh"
NAMESPACE = "kueue-system"


@dataclass(frozen=True)
class KueueParts:
    binary: Path
    crds: Path
    # Kueue's aggregated ClusterRoles batch-admin-role and batch-user-role.
    rbac: Path


def obtain_kueue(progress: Callable[[str], None]) -> KueueParts:
    """The Kueue binary, CRDs and batch roles (a cold build takes several minutes)."""
    try:
        found = buildscript.run(SCRIPT, [], progress, timeout=BUILD_TIMEOUT)
        return KueueParts(found["KUEUE"], found["KUEUE_CRDS"], found["KUEUE_RBAC"])
    except buildscript.BuildScriptError as error:
        raise ClusterError(str(error)) from None
    except KeyError:
        raise ClusterError(
            f"{SCRIPT} printed no KUEUE=<path>, KUEUE_CRDS=<dir> and KUEUE_RBAC=<dir>"
        ) from None


def obtain_kueue_crds(progress: Callable[[str], None]) -> Path:
    """The folder of Kueue's CRDs, from its module on the Go module proxy (no build)."""
    try:
        return buildscript.run(SCRIPT, ["crds"], progress, timeout=BUILD_TIMEOUT)["KUEUE_CRDS"]
    except buildscript.BuildScriptError as error:
        raise ClusterError(str(error)) from None
    except KeyError:
        raise ClusterError(f"{SCRIPT} crds printed no KUEUE_CRDS=<dir>") from None


def install_kueue_crds(server: ApiServer, crds: Path) -> None:
    """Server-side apply Kueue's CRDs and wait until they serve."""
    documents = [yaml.safe_load(path.read_text()) for path in sorted(crds.glob("*.yaml"))]
    server.apply(*documents)
    server.wait_established(*(f"crd/{d['metadata']['name']}" for d in documents))


def configuration(
    workdir: Path, health_port: int, webhook_port: int, pods_ready: dict[str, Any] | None = None
) -> dict[str, object]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2) for a run on loopback;
    `pods_ready` is its `waitForPodsReady` (absent: off)."""
    extra = {"waitForPodsReady": pods_ready} if pods_ready else {}
    return extra | {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(workdir / "certs")},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "clientConnection": {"qps": 50, "burst": 100},
        "integrations": {"frameworks": ["batch/job"]},
    }


@dataclass(frozen=True)
class Kueue:
    log: Path


@contextmanager
def run_kueue(
    binary: Path, server: ApiServer, workdir: Path, pods_ready: dict[str, Any] | None = None
) -> Iterator[Kueue]:
    """The Kueue controller against `server` until the block ends (`pods_ready`: its
    `waitForPodsReady` configuration)."""
    if shutil.which("unshare") is None:
        raise ClusterError("running Kueue out of cluster needs `unshare` (util-linux)")
    workdir.mkdir(parents=True, exist_ok=True)
    certs = workdir / "certs"
    certs.mkdir(exist_ok=True)
    pki = make_pki(certs)
    shutil.copy(pki.serving_cert, certs / "tls.crt")
    shutil.copy(pki.serving_key, certs / "tls.key")
    health = free_port()
    config = workdir / "kueue-config.yaml"
    config.write_text(yaml.safe_dump(configuration(workdir, health, free_port(), pods_ready)))
    server.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    metrics_certs = "/etc/kueue/metrics/certs"
    script = (
        f"mount -t tmpfs tmpfs /etc && mkdir -p {metrics_certs} && "
        f'cp "$1/tls.crt" "$1/tls.key" {metrics_certs}/ && shift && exec "$@"'
    )
    command = [
        "unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "kueue",
        str(certs), str(binary), f"--config={config}", f"--kubeconfig={server.kubeconfig}",
        "--feature-gates=VisibilityOnDemand=false", "--zap-log-level=3",
    ]  # fmt: skip
    log = workdir / "kueue.log"
    with running(command, log) as process:
        wait_until(lambda: http_ok(f"http://127.0.0.1:{health}/readyz"), process, log, "kueue")
        yield Kueue(log)


@contextmanager
def run_status_writer(
    server: ApiServer, workdir: Path, kubeconfig: Path | None = None
) -> Iterator[Path]:
    """The Workload-status writer (`python -m app kueue-status`) against `server`, as whoever
    `kubeconfig` authenticates (by default the admin), its log's path yielded once both its
    watches have listed."""
    log = workdir / "kueue-status.log"
    with log.open("ab") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "app", "kueue-status", "--port", "0"], cwd=REPO,
            env={**os.environ, "KUBECONFIG": str(kubeconfig or server.kubeconfig)}, stdout=sink,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    try:

        def watching() -> bool:
            text = log.read_text()
            return all(f"{kind} objects; watching" in text for kind in ("Workload", "Pod"))

        wait_until(watching, process, log, "the Workload-status writer")
        yield log
    finally:
        stop(process)
