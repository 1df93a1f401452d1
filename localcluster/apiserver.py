"""Run etcd and kube-apiserver on loopback as child processes, and talk to them with kubectl."""

import json
import os
import secrets
import ssl
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .binaries import BUILD_TIMEOUT, Binaries, obtain_binaries, obtain_kubectl
from .errors import ClusterError, KubectlError
from .pki import Pki, make_pki
from .ports import free_port
from .processes import http_ok, running, wait_until

# The names callers have long imported from here, wherever they now live.
__all__ = [
    "BUILD_TIMEOUT",
    "ApiServer",
    "Binaries",
    "ClusterError",
    "KubectlError",
    "cluster",
    "http_ok",
    "obtain_binaries",
    "obtain_kubectl",
    "running",
    "token_kubeconfig",
    "wait_until",
]

KUBECTL_TIMEOUT = 60
ADMIN_USER = "mxjob-test-admin"
# Who Metacontroller is in a cluster (the with-metacontroller overlay's ServiceAccount), and the
# groups the API server gives a ServiceAccount's token: rights come only from what binds them.
METACONTROLLER_USER = "system:serviceaccount:metacontroller:metacontroller"
METACONTROLLER_GROUPS = (
    "system:serviceaccounts",
    "system:serviceaccounts:metacontroller",
    "system:authenticated",
)


@dataclass(frozen=True)
class ApiServer:
    """A running API server: where it is, how to authenticate, and kubectl wired to it.
    `kubeconfig` is the admin's; `metacontroller_kubeconfig` authenticates as Metacontroller's
    ServiceAccount (`METACONTROLLER_USER`), which may do only what a binding grants it."""

    url: str
    token: str
    ca_cert: Path
    kubeconfig: Path
    kubectl_path: Path
    kubectl_cache: Path
    metacontroller_kubeconfig: Path

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout: float = KUBECTL_TIMEOUT,
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this server; raise KubectlError on failure unless check=False."""
        command = [str(self.kubectl_path), f"--kubeconfig={self.kubeconfig}"]
        command += [f"--cache-dir={self.kubectl_cache}", *args]
        env = {key: value for key, value in os.environ.items() if key != "KUBECONFIG"}
        result = subprocess.run(
            command, input=input, capture_output=True, text=True, timeout=timeout, env=env
        )
        if check and result.returncode != 0:
            raise KubectlError(args, result)
        return result

    def apply(
        self, *documents: dict[str, Any], check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Server-side apply the documents, as field manager `mxjob-tests`."""
        manifest = yaml.safe_dump_all(documents, sort_keys=False)
        return self.kubectl(
            "apply", "--server-side", "--field-manager=mxjob-tests", "-f", "-",
            input=manifest, check=check,
        )  # fmt: skip

    def wait_established(self, *names: str) -> None:
        """Wait until each named CRD (`crd/<name>`) serves its resource."""
        # `kubectl wait --for=condition=...` fails at once, instead of waiting, while a CRD has
        # no conditions yet (a large schema takes the server a moment): wait for them first.
        for name in names:
            self.kubectl("wait", "--for=jsonpath={.status.conditions}", "--timeout=60s", name)
        self.kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)

    def get(self, *args: str) -> dict[str, Any]:
        """`kubectl get ... -o json`, parsed."""
        document: dict[str, Any] = json.loads(self.kubectl("get", *args, "-o", "json").stdout)
        return document


def etcd_command(etcd: Path, data_dir: Path, client_port: int, peer_port: int) -> list[str]:
    client, peer = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
    return [
        str(etcd), "--name=mxjob-test", f"--data-dir={data_dir}",
        f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=mxjob-test={peer}", "--listen-metrics-urls=",
        "--unsafe-no-fsync", "--log-level=warn",
    ]  # fmt: skip


# Admission plugins enabled beyond kube-apiserver's defaults.
ADMISSION_PLUGINS = ("OwnerReferencesPermissionEnforcement",)


# Every request's metadata (who, verb, resource, namespace, code), once, when its response is done.
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived", "ResponseStarted"],
    "rules": [{"level": "Metadata"}],
}


def apiserver_command(
    binary: Path, pki: Pki, token_file: Path, etcd_port: int, port: int, cert_dir: Path
) -> list[str]:
    # The flags envtest uses; ServiceAccount admission is off because no controller-manager
    # creates the `default` service account that it would demand for every pod.
    # OwnerReferencesPermissionEnforcement is on, as OpenShift and hardened clusters run it: a
    # client may set `blockOwnerDeletion` (Metacontroller does on every child) only if it may
    # update the owner's finalizers (docs/security.md, "Metacontroller's permissions").
    return [
        str(binary), "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
        f"--secure-port={port}", f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        f"--tls-cert-file={pki.serving_cert}", f"--tls-private-key-file={pki.serving_key}",
        f"--cert-dir={cert_dir}", f"--token-auth-file={token_file}",
        "--authorization-mode=RBAC", "--disable-admission-plugins=ServiceAccount",
        f"--enable-admission-plugins={','.join(ADMISSION_PLUGINS)}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki.service_account_pub}",
        f"--service-account-signing-key-file={pki.service_account_key}",
        "--service-cluster-ip-range=10.0.0.0/24", "--allow-privileged=true",
        "--profiling=false", "--v=1",
    ]  # fmt: skip


def token_kubeconfig(server: ApiServer, namespace: str, account: str, path: Path) -> Path:
    """A kubeconfig at `path` with a token of the ServiceAccount `namespace/account`
    (TokenRequest, 2 hours), to run a component as its own identity."""
    token = server.kubectl("create", "token", account, "-n", namespace, "--duration=2h").stdout
    return write_kubeconfig(path, server.url, server.ca_cert, token.strip())


def write_kubeconfig(
    path: Path, url: str, ca_cert: Path, token: str, user: str = ADMIN_USER
) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "mxjob-test",
                "cluster": {"server": url, "certificate-authority": str(ca_cert)},
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "mxjob-test", "context": {"cluster": "mxjob-test", "user": user}}],
        "current-context": "mxjob-test",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


def audit_flags(workdir: Path, audit_log: Path) -> list[str]:
    """The flags that write every request to `audit_log`, one JSON event a line."""
    policy = workdir / "audit-policy.yaml"
    policy.write_text(yaml.safe_dump(AUDIT_POLICY, sort_keys=False))
    return [
        f"--audit-policy-file={policy}", f"--audit-log-path={audit_log}",
        "--audit-log-format=json", "--audit-log-mode=blocking", "--audit-log-maxsize=0",
    ]  # fmt: skip


@contextmanager
def cluster(
    binaries: Binaries,
    workdir: Path,
    audit_log: Path | None = None,
    flags: tuple[str, ...] = (),
) -> Iterator[ApiServer]:
    """etcd plus kube-apiserver on free loopback ports, with a static system:masters token and
    one for Metacontroller's ServiceAccount (bound to nothing until a role is applied); `flags`
    are added to the API server's command line (for example `--event-ttl=20s`).

    With `audit_log`, the API server also writes every request's metadata there, a JSON line
    per request, before it answers (blocking mode: the log is complete when the answer is in).
    """
    pki = make_pki(workdir)
    token, metacontroller_token = secrets.token_hex(16), secrets.token_hex(16)
    token_file = workdir / "tokens.csv"
    token_file.write_text(
        f'{token},{ADMIN_USER},{ADMIN_USER},"system:masters"\n'
        f"{metacontroller_token},{METACONTROLLER_USER},{METACONTROLLER_USER},"
        f'"{",".join(METACONTROLLER_GROUPS)}"\n'
    )
    etcd_port, peer_port, port = free_port(), free_port(), free_port()
    etcd_log, apiserver_log = workdir / "etcd.log", workdir / "kube-apiserver.log"
    etcd = etcd_command(binaries.etcd, workdir / "etcd-data", etcd_port, peer_port)
    with running(etcd, etcd_log) as etcd_process:
        health = f"http://127.0.0.1:{etcd_port}/health"
        wait_until(lambda: http_ok(health), etcd_process, etcd_log, "etcd")
        command = apiserver_command(
            binaries.kube_apiserver, pki, token_file, etcd_port, port, workdir / "certs"
        ) + list(flags)
        if audit_log is not None:
            command += audit_flags(workdir, audit_log)
        with running(command, apiserver_log) as apiserver_process:
            url = f"https://127.0.0.1:{port}"
            context = ssl.create_default_context(cafile=str(pki.ca_cert))
            ready = lambda: http_ok(f"{url}/readyz", context, token)  # noqa: E731
            wait_until(ready, apiserver_process, apiserver_log, "kube-apiserver")
            kubeconfig = write_kubeconfig(workdir / "kubeconfig", url, pki.ca_cert, token)
            metacontroller_kubeconfig = write_kubeconfig(
                workdir / "metacontroller.kubeconfig", url, pki.ca_cert, metacontroller_token,
                METACONTROLLER_USER,
            )  # fmt: skip
            yield ApiServer(
                url, token, pki.ca_cert, kubeconfig, binaries.kubectl, workdir / "kubectl-cache",
                metacontroller_kubeconfig,
            )  # fmt: skip
