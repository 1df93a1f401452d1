"""The latency bench's stack: the real stack, its audit log keeping the MXJob status updates'
bodies."""

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import yaml

from localcluster.apiserver import cluster
from localcluster.binaries import obtain_binaries
from localcluster.crds import install_crds
from localcluster.realstack import install_controller, obtain_metacontroller, serve_hook
from localcluster.stack import Stack, install_adoption_guard, overlay_access, shipped_flags

# The MXJob status updates with their body (which condition they carry); the rest, metadata.
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived", "ResponseStarted"],
    "rules": [
        {
            "level": "Request",
            "verbs": ["update"],
            "resources": [{"group": "kubeflow.org", "resources": ["mxjobs/status"]}],
        },
        {"level": "Metadata"},
    ],
}


def audit_flags(workdir: Path, audit_log: Path) -> tuple[str, ...]:
    """The API server's flags that write AUDIT_POLICY's events to `audit_log`."""
    policy = workdir / "latency-audit-policy.yaml"
    policy.write_text(yaml.safe_dump(AUDIT_POLICY, sort_keys=False))
    return (
        f"--audit-policy-file={policy}", f"--audit-log-path={audit_log}",
        "--audit-log-format=json", "--audit-log-mode=blocking", "--audit-log-maxsize=0",
    )  # fmt: skip


@contextmanager
def latency_stack(workdir: Path, progress: Callable[[str], None]) -> Iterator[tuple[Stack, Path]]:
    """The real stack of `localcluster.stack.real_stack`, its audit log at AUDIT_POLICY."""
    binaries = obtain_binaries(progress)
    binary = obtain_metacontroller(progress)
    audit_log = workdir / "audit.log"
    flags = audit_flags(workdir, audit_log)
    with ExitStack() as scope:
        progress("starting etcd and kube-apiserver on loopback")
        server = scope.enter_context(cluster(binaries, workdir, flags=flags))
        install_crds(server)
        hook = scope.enter_context(serve_hook(workdir))
        install_controller(server, hook.url)
        install_adoption_guard(server)
        yield Stack(server, hook, binary, workdir, overlay_access(server)), audit_log


def settings(names: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    """Metacontroller's settings by name: a label and its flags."""
    shipped = shipped_flags()
    known = {
        "shipped": ("shipped (server-side-apply)", shipped),
        "dynamic": (
            "shipped but dynamic-apply",
            tuple(f for f in shipped if not f.startswith("--apply-strategy=")),
        ),
    }
    return [known[n] for n in names]
