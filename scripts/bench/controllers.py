"""The controllers the end-to-end bench compares, each started fresh for a measurement on the
same API server: ours (the real Metacontroller with a setting's flags, and a fresh hook it
calls) or training-operator v1.8.1 as its release ships it (localcluster/training_operator.py).
`Running` names each process (for its CPU and memory from /proc), the user agent of its API
requests (the audit log) and where its Go runtime's figures are (its /metrics)."""

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import httpx

from localcluster import training_operator as to
from localcluster.ports import free_port
from localcluster.realstack import Hook, composite_controller, serve_hook
from localcluster.stack import Stack
from localcluster.waiting import wait_for
from scripts.bench.workloads import Setting

INLINE_BODY_LIMIT = 192 * 1024 * 1024  # the previous release's MXJOB_MAX_BODY_BYTES
TRAINING_OPERATOR = "training-operator v1.8.1"


@dataclass(frozen=True)
class Running:
    pids: dict[str, int]  # "Metacontroller" and "hook", or "training-operator"
    agent: str  # the user agent of its API requests starts with this
    go_metrics: str  # the Go process's /metrics
    hook: Hook | None = None
    # Its webhook refuses MXJob writes (deletes too) while it is down: jobs are deleted while
    # it runs. Ours are deleted once Metacontroller is stopped, so that nothing recreates them.
    clean_while_running: bool = False


@dataclass
class TrainingOperator:
    """training-operator installed on the stack's API server once, on first use: from then on
    its webhook refuses MXJob writes while it is down, so ours are measured before it."""

    stack: Stack
    progress: Callable[[str], None]
    release: to.Release | None = None
    port: int = 0  # its webhook server's, fixed once installed (the configuration names it)

    def installed(self) -> to.Release:
        if self.release is None:
            self.port = free_port()
            self.progress(
                "obtaining training-operator v1.8.1 (scripts/training-operator-binary.sh)"
            )
            self.release = to.obtain(self.progress)
            to.install(self.stack.apiserver, self.release, self.port)
            # Its MXJob CRD replaced ours: the API server answers a watch of MXJobs with 429
            # ("storage is (re)initializing") until its cache is rebuilt.
            wait_for(lambda: watchable(self.stack), "a watch of MXJobs after the CRD change")
        return self.release


def watchable(stack: Stack) -> bool:
    watch = "/apis/kubeflow.org/v1/mxjobs?watch=true&timeoutSeconds=1"
    return stack.apiserver.kubectl("get", "--raw", watch, check=False).returncode == 0


@contextmanager
def started(
    stack: Stack, setting: Setting, flags: tuple[str, ...], rival: TrainingOperator
) -> Iterator[Running]:
    """The setting's controller, fresh (so that its peak memory is this measurement's)."""
    if setting.name == TRAINING_OPERATOR:
        release = rival.installed()
        args = to.deployment_args(stack.apiserver)
        with to.run(release, stack.apiserver, stack.workdir, rival.port, args) as process:
            pids = {"training-operator": process.process.pid}
            yield Running(pids, to.USER_AGENT, process.metrics_url, clean_while_running=True)
        return
    with ExitStack() as scope:
        env = {"MXJOB_MAX_BODY_BYTES": str(INLINE_BODY_LIMIT)} if setting.inline else {}
        hook = scope.enter_context(serve_hook(stack.workdir, env))
        stack.apiserver.apply(composite_controller(hook.url, config_maps=not setting.inline))
        controller = scope.enter_context(stack.metacontroller(flags))
        pids = {"Metacontroller": controller.process.pid, "hook": hook.process.pid}
        yield Running(pids, "metacontroller", controller.metrics_url, hook)


def go_memory_mib(metrics_url: str) -> dict[str, float]:
    """The Go runtime's heap in use and memory obtained from the OS, MiB (its /metrics)."""
    text = httpx.get(metrics_url, trust_env=False, timeout=30).text
    wanted = {"go_memstats_heap_inuse_bytes": "heap", "go_memstats_sys_bytes": "sys"}
    out = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in wanted:
            out[wanted[name]] = float(value) / 2**20
    return out
