"""The real stack on loopback for `make demo`, tests/e2e and `make bench-e2e`: etcd,
kube-apiserver, the hook, our CRD and CompositeController, and the real Metacontroller (run
with any flags, one at a time).

It is this package's parts (apiserver.py, realstack.py, crds.py) put together once; nothing
here is a double. `Stack.metacontroller(flags)` runs one Metacontroller at a time.
"""

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .apiserver import ApiServer, cluster, obtain_binaries
from .crds import install_crds
from .realstack import (
    Hook,
    Metacontroller,
    install_controller,
    obtain_metacontroller,
    run_metacontroller,
    serve_hook,
)

REPO = Path(__file__).resolve().parents[1]
# The admission policy the with-metacontroller overlay installs beside those flags.
ADOPTION_GUARD = REPO / "manifests" / "components" / "adoption-guard" / "policy.yaml"
FLAGS_PATCH = REPO / "manifests" / "overlays" / "with-metacontroller" / "metacontroller-flags.yaml"
FLAG_NAMES = (
    "--client-go-qps",
    "--client-go-burst",
    "--workers",
    "--apply-strategy",
    "--zap-log-level",
    "--discovery-interval",
    "--cache-flush-interval",
)


def shipped_flags() -> tuple[str, ...]:
    """The flags the one-command install adds to Metacontroller's own or puts in place of one
    (read from the overlay, so that the bench measures exactly what ships). Given after
    Metacontroller's own, each wins over the one it replaces."""
    ops = yaml.safe_load(FLAGS_PATCH.read_text())
    flags = tuple(str(op["value"]) for op in ops if op["op"] in ("add", "replace"))
    missing = [name for name in FLAG_NAMES if not any(f.startswith(f"{name}=") for f in flags)]
    if missing:
        raise RuntimeError(f"{FLAGS_PATCH} sets no {missing}")
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


@dataclass
class Stack:
    """A running API server and hook with our controller installed; Metacontroller on demand."""

    apiserver: ApiServer
    hook: Hook
    binary: Path
    workdir: Path
    _controllers: list[Metacontroller] = field(default_factory=list)

    @contextmanager
    def metacontroller(self, flags: tuple[str, ...] = ()) -> Iterator[Metacontroller]:
        with run_metacontroller(self.binary, self.apiserver, self.workdir, flags) as controller:
            self._controllers.append(controller)
            yield controller


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
        server.kubectl("apply", "-f", str(ADOPTION_GUARD))
        yield Stack(server, hook, binary, workdir)
