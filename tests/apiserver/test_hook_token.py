"""The bearer token end to end (docs/security.md, "Telling Metacontroller"), on a stack of its
own: the real API server, the real hook started with `MXJOB_AUTH_TOKEN_FILE`, and the real
Metacontroller v4.17.2 with our CompositeController carrying the `authorization` block read
from docs/security.md (its Secret, namespace and key as the page names them). What it shows:
1. with the Secret holding the hook's token, a job gets its pod, Service and ConfigMap and
   the Created condition, with Metacontroller under the shipped role plus the Secrets rule
   docs/install.md gives for the token (and under the shipped role alone, refused the Secret);
2. Metacontroller reads the Secret only when it sets the controller up (when it starts, or
   when the CompositeController's spec changes): with a wrong token put in the Secret and the
   CompositeController touched by an annotation, its syncs still carry the old token;
3. restarted, it sends the wrong token: every sync is answered 401, counted under
   `unauthorized` in the hook's metrics; Metacontroller reports it as a SyncError event on
   the job, and nothing is created or deleted: the first job's children are as they were, a
   new job gets none;
4. the right token back and Metacontroller restarted: the new job gets its children."""

import base64
import re
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.apiserver import ApiServer, Binaries, cluster
from localcluster.crds import install_crds
from localcluster.realstack import (
    Hook,
    Metacontroller,
    composite_controller,
    install_controller,
    run_metacontroller,
    serve_hook,
)
from localcluster.rest import Rest
from localcluster.waiting import wait_for
from tests.support import REPO
from tests.support.cluster_errors import fail_on_cluster_error
from tests.support.documented import authorization
from tests.support.kustomize import shipped_access
from tests.support.scenario import CREATED, Job, State, apply_job, expected_children, manifest, pods

TOKEN = "s3cr3t-hook-token-0123456789abcdef"
RESYNC = 3  # seconds, the CompositeController's resyncPeriodSeconds here (none as shipped)
TOKEN_ROLE = "metacontroller-hook-token"


def token_rules() -> list[dict[str, Any]]:
    """docs/install.md's rules to add to Metacontroller's role for the hook's token."""
    text = (REPO / "docs" / "install.md").read_text()
    (block,) = re.findall(r"```yaml\n# for the hook's bearer token\n(.*?)```", text, re.S)
    rules: list[dict[str, Any]] = yaml.safe_load(block)
    return rules


def token_access(server: ApiServer, granted: bool) -> None:
    """The documented rules in a ClusterRole of their own, bound to Metacontroller's
    ServiceAccount (`granted`) or not."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": TOKEN_ROLE}, "rules": token_rules(),
    }  # fmt: skip
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": TOKEN_ROLE},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": TOKEN_ROLE},
        "subjects": [{"kind": "ServiceAccount", "name": "metacontroller",
                      "namespace": "metacontroller"}],
    }  # fmt: skip
    if granted:
        server.apply(role, binding)
    else:
        server.kubectl("delete", "clusterrolebinding", TOKEN_ROLE, "--ignore-not-found")


@dataclass(frozen=True)
class Stack:
    server: ApiServer
    hook: Hook
    secret: dict[str, str]  # the documented secretRef: name, namespace, key
    binary: Path
    workdir: Path
    access: Path  # the kubeconfig of Metacontroller's ServiceAccount

    @contextmanager
    def metacontroller(self, refused: bool = False) -> Iterator[Metacontroller]:
        """Metacontroller, started (a restart: `kubectl rollout restart` in a cluster), as its
        ServiceAccount; on the way out, whether the API server refused it anything is as
        `refused` says."""
        with run_metacontroller(
            self.binary, self.server, self.workdir, kubeconfig=self.access
        ) as running:
            yield running
            assert bool(running.refusals()) == refused, running.refusals()


def secret_with(ref: dict[str, str], token: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": ref["name"], "namespace": ref["namespace"]},
        "data": {ref["key"]: base64.b64encode(token.encode()).decode()},
    }


def with_token(hook_url: str) -> dict[str, Any]:
    """Our CompositeController for the hook at `hook_url`, with the documented authorization."""
    controller = composite_controller(hook_url)
    controller["spec"]["hooks"]["sync"]["webhook"]["authorization"] = authorization()
    controller["spec"]["resyncPeriodSeconds"] = RESYNC
    return controller


@pytest.fixture(scope="module")
def stack(
    k8s_binaries: Binaries, metacontroller_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("hook-token")
    token_file = workdir / "token"
    token_file.write_text(f"{TOKEN}\n")  # as a mounted Secret holds it, newline and all
    ref = authorization()["secretRef"]
    with fail_on_cluster_error():
        env = {"MXJOB_AUTH_TOKEN_FILE": str(token_file)}
        with cluster(k8s_binaries, workdir) as server, serve_hook(workdir, env) as hook:
            install_crds(server)
            install_controller(server, hook.url)  # Metacontroller's CRDs, then ours
            server.apply({"apiVersion": "v1", "kind": "Namespace",
                          "metadata": {"name": ref["namespace"]}})  # fmt: skip
            server.apply(secret_with(ref, TOKEN))
            server.apply(with_token(hook.url))
            access = shipped_access(server)
            token_access(server, granted=True)
            yield Stack(server, hook, ref, metacontroller_binary, workdir, access)


def outcomes(hook: Hook) -> dict[str, float]:
    """The hook's sync counters by outcome (/metrics, which the token does not guard)."""
    with urllib.request.urlopen(f"{hook.url}/metrics", timeout=5) as response:
        text = response.read().decode()
    found = re.findall(r'^mxjob_sync_requests_total\{outcome="(\w+)"\} (\S+)$', text, re.M)
    return {outcome: float(count) for outcome, count in found}


def rotate(stack: Stack, token: str) -> None:
    stack.server.apply(secret_with(stack.secret, token))


def touch(stack: Stack) -> None:
    """An annotation on the CompositeController: a write that leaves its spec as it was."""
    stack.server.kubectl(
        "annotate", "--overwrite", "compositecontroller/mxjob-controller", "test/touched=1"
    )


def more_syncs(stack: Stack, namespace: str, name: str, count: int) -> None:
    """Wait until the hook has answered `count` more syncs of the job with 200."""
    start = stack.hook.syncs(namespace, name)
    wait_for(
        lambda: stack.hook.syncs(namespace, name) - start,
        f"{count} more syncs of {name} answered",
        until=lambda n: n >= count,
    )


def test_metacontroller_sends_the_documented_token_and_a_wrong_one_is_refused(
    stack: Stack,
) -> None:
    namespace = "token"
    stack.server.kubectl("create", "namespace", namespace)
    job_manifest = manifest("examples/single-worker.yaml")
    names = tuple(expected_children(job_manifest))
    with Rest(stack.server) as rest:
        # 1. The right token: the job is built.
        with stack.metacontroller():
            job = apply_job(stack.server, rest, namespace, job_manifest)
            job.reaches(State(CREATED, pods("Pending", *names), names), "created with the token")
            assert outcomes(stack.hook).get("unauthorized", 0) == 0
            children = job.children()
            assert {k.split("/")[0] for k in children} == {"Pod", "Service", "ConfigMap"}

            # 2. A wrong token in the Secret and a touch: Metacontroller still sends the old one.
            rotate(stack, "not-the-hook-token")
            touch(stack)
            more_syncs(stack, namespace, job.name, 3)
            assert outcomes(stack.hook).get("unauthorized", 0) == 0, "a touch re-reads nothing"

        # 3. Restarted, Metacontroller sends the wrong token: every sync refused, nothing written.
        second = dict(job_manifest, metadata={**job_manifest["metadata"], "name": "second"})
        late = _the_wrong_token_is_refused(stack, rest, namespace, job, children, second)

        # 4. The right token back, Metacontroller restarted.
        rotate(stack, TOKEN)
        with stack.metacontroller():
            second_names = tuple(expected_children(second))
            late.reaches(
                State(CREATED, pods("Pending", *second_names), second_names), "created once right"
            )


def _the_wrong_token_is_refused(
    stack: Stack,
    rest: Rest,
    namespace: str,
    job: Job,
    children: dict[str, Any],
    second: dict[str, Any],
) -> Job:
    """Metacontroller restarted with the wrong token: every sync of the running job and of a job
    applied now is refused with 401, counted, and nothing of either is written (the first job's
    `children` as the right token left them); the late job returned."""
    before = {**job.versions(), **{k: c["metadata"]["uid"] for k, c in children.items()}}
    with stack.metacontroller():
        wait_for(
            lambda: job.warning_messages("SyncError"),
            "a SyncError event on the job",
            until=lambda messages: any("401" in m for m in messages),
        )
        late = apply_job(stack.server, rest, namespace, second)
        wait_for(
            lambda: late.warning_messages("SyncError"),
            "a SyncError event on the job applied under the wrong token",
            until=lambda messages: any("401" in m for m in messages),
        )
        counted = outcomes(stack.hook).get("unauthorized", 0)
        assert counted >= 2, "each refused sync is counted"
        (message, *_) = [m for m in late.warning_messages("SyncError") if "401" in m]
        assert "unsupported status code: 401" in message, message
        assert late.children() == {}, "nothing created under the wrong token"
        after = job.children()
        versions = {**job.versions(), **{k: c["metadata"]["uid"] for k, c in after.items()}}
        assert versions == before, "nothing of the first job written or deleted"
        assert late.status() == {}, "no status written either"
    print(f"\nwrong token: {counted:.0f} syncs answered 401; event: {message[:100]}")
    return late


def test_under_the_shipped_role_alone_metacontroller_is_refused_the_secret(stack: Stack) -> None:
    """Why docs/install.md adds a rule for the token: without it, Metacontroller's cache of
    Secrets is refused."""
    token_access(stack.server, granted=False)
    try:
        with stack.metacontroller(refused=True) as running:
            wait_for(
                running.refusals,
                "Metacontroller refused the Secrets",
                until=lambda lines: any("secrets is forbidden" in line for line in lines),
            )
    finally:
        token_access(stack.server, granted=True)
