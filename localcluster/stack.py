"""The real stack on loopback for `make demo`, tests/e2e and `make bench-e2e`: etcd,
kube-apiserver, the hook, our CRD and CompositeController, and the real Metacontroller (run
with any flags, one at a time).

It is this package's parts (apiserver.py, realstack.py, crds.py) put together once; nothing
here is a double. `Stack.metacontroller(flags)` runs one Metacontroller at a time.
"""

import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import REPO as REPO  # re-exported: the benchmark reads it here
from .apiserver import ApiServer, cluster
from .binaries import obtain_binaries
from .crds import install_crds
from .errors import ClusterError
from .realstack import (
    Hook,
    Metacontroller,
    grant_metacontroller,
    install_controller,
    obtain_metacontroller,
    run_metacontroller,
    serve_hook,
)
from .waiting import wait_for

# The admission policy the with-metacontroller overlay installs beside those flags.
ADOPTION_GUARD = REPO / "manifests" / "components" / "adoption-guard" / "policy.yaml"
WITH_METACONTROLLER = REPO / "manifests" / "overlays" / "with-metacontroller"
FLAGS_PATCH = WITH_METACONTROLLER / "metacontroller-flags.yaml"
FLAG_NAMES = (
    "--client-go-qps",
    "--client-go-burst",
    "--workers",
    "--apply-strategy",
    "--zap-log-level",
    "--discovery-interval",
    "--cache-flush-interval",
)
LEADER_ELECTION = "--leader-election"
# The object `install_adoption_guard` probes the guard with (a dry run changes nothing).
GUARD_PROBE = "mxjob-adoption-guard-probe"


def install_adoption_guard(server: ApiServer, namespace: str = "default") -> None:
    """Apply the adoption guard and return once the API server enforces it. A new admission
    policy takes effect moments after it is created, not at once: a Metacontroller started in
    between could adopt what the guard is there to refuse. In force means a server-side dry run
    that would give a probe ConfigMap an MXJob owner is refused with the guard's message."""
    server.kubectl("apply", "-f", str(ADOPTION_GUARD))
    probe = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": GUARD_PROBE, "namespace": namespace},
    }
    server.apply(probe)
    owner = {
        "apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": "probe",
        "uid": "00000000-0000-0000-0000-000000000000", "controller": True,
    }  # fmt: skip
    adopt = json.dumps({"metadata": {"ownerReferences": [owner]}})
    wait_for(
        lambda: server.kubectl(
            "patch",
            "configmap",
            GUARD_PROBE,
            f"--namespace={namespace}",
            "--type=merge",
            f"--patch={adopt}",
            "--dry-run=server",
            check=False,
        ),
        "the adoption guard in force",
        timeout=30,
        until=lambda result: result.returncode != 0 and "is not its child" in result.stderr,
    )
    server.kubectl("delete", "configmap", GUARD_PROBE, f"--namespace={namespace}")


def overlay_flags() -> tuple[str, ...]:
    """Every argument the with-metacontroller overlay adds to Metacontroller's own or puts in
    place of one, in order (read from the overlay's patch)."""
    ops = yaml.safe_load(FLAGS_PATCH.read_text())
    return tuple(
        str(op["value"]) for op in ops if op["op"] in ("add", "replace") and "/args/" in op["path"]
    )


def shipped_flags() -> tuple[str, ...]:
    """The flags the one-command install gives each Metacontroller process for how it syncs
    (read from the overlay, so that the bench measures exactly what ships); its leader-election
    flags (`leader_election_flags`) are left out: they decide which replica syncs, not how, and
    a lone process would only wait for its lease. Given after Metacontroller's own, each wins
    over the one it replaces."""
    flags = tuple(f for f in overlay_flags() if not f.startswith(LEADER_ELECTION))
    missing = [name for name in FLAG_NAMES if not any(f.startswith(f"{name}=") for f in flags)]
    if missing:
        raise RuntimeError(f"{FLAGS_PATCH} sets no {missing}")
    return flags


def leader_election_flags() -> tuple[str, ...]:
    """The overlay's leader-election flags (`--leader-election`, its namespace and id)."""
    flags = tuple(f for f in overlay_flags() if f.startswith(LEADER_ELECTION))
    if "--leader-election" not in flags:
        raise RuntimeError(f"{FLAGS_PATCH} does not turn leader election on")
    return flags


# The flags the overlay set after release 0.1.0: its default apply strategy (dynamic-apply), its
# release's log level, discovery interval and cache flush were Metacontroller's own.
NEW_SINCE_0_1_0 = (
    "--apply-strategy=",
    "--zap-log-level=",
    "--discovery-interval=",
    "--cache-flush-interval=",
)


def release_0_1_0_flags() -> tuple[str, ...]:
    """What release 0.1.0's with-metacontroller overlay gave Metacontroller: the shipped flags
    but those set since (Metacontroller's default apply strategy, `dynamic-apply`)."""
    return tuple(f for f in shipped_flags() if not f.startswith(NEW_SINCE_0_1_0))


def overlay_access(server: ApiServer) -> Path:
    """Metacontroller's ClusterRole and binding as the with-metacontroller overlay ships them
    (`kubectl kustomize`), applied; the kubeconfig of the ServiceAccount they bind."""
    built = server.kubectl("kustomize", str(WITH_METACONTROLLER)).stdout
    return grant_metacontroller(server, [d for d in yaml.safe_load_all(built) if d])


@dataclass
class Stack:
    """A running API server and hook with our controller installed; Metacontroller on demand,
    as the ServiceAccount the with-metacontroller overlay binds to its role (`access`)."""

    apiserver: ApiServer
    hook: Hook
    binary: Path
    workdir: Path
    access: Path

    @contextmanager
    def metacontroller(self, flags: tuple[str, ...] = ()) -> Iterator[Metacontroller]:
        """One Metacontroller; on the way out, fail if the API server refused it anything
        (a rule the shipped role lacks)."""
        with run_metacontroller(
            self.binary, self.apiserver, self.workdir, flags, self.access
        ) as controller:
            yield controller
            refused = controller.refusals()
            if refused:
                raise ClusterError(
                    "Metacontroller was refused under the shipped role:\n" + "\n".join(refused[:5])
                )


@contextmanager
def real_stack(
    workdir: Path, progress: Callable[[str], None], audit_log: Path | None = None
) -> Iterator[Stack]:
    """Build or find the binaries, start etcd, kube-apiserver and the hook, install the CRDs,
    our CompositeController (pointed at the hook) and the adoption guard, as the
    with-metacontroller overlay does. Everything stops on the way out."""
    progress("obtaining kube-apiserver, etcd and kubectl (scripts/k8s-binaries.sh)")
    binaries = obtain_binaries(progress)
    progress("obtaining Metacontroller v4.17.2 (scripts/metacontroller-binary.sh)")
    binary = obtain_metacontroller(progress)
    with ExitStack() as stack:
        progress("starting etcd and kube-apiserver on loopback")
        server = stack.enter_context(cluster(binaries, workdir, audit_log=audit_log))
        install_crds(server)
        hook = stack.enter_context(serve_hook(workdir))
        progress(f"hook: python -m app serve at {hook.url} (log {hook.log})")
        install_controller(server, hook.url)
        install_adoption_guard(server)
        yield Stack(server, hook, binary, workdir, overlay_access(server))
