"""The one-command install (`manifests/overlays/with-metacontroller`) on a real API server.

Built with the real `kubectl kustomize`, Metacontroller's release manifests taken from the
local copy of v4.17.2 in place of the pinned GitHub base (tests/support/kustomize.py), and applied with
`kubectl apply` as docs/install.md says, to an API server of its own (it installs our
CompositeController for the in-cluster Service, which the shared server's real stack must not
get).
"""

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.apiserver import ApiServer, Binaries, cluster
from localcluster.stack import install_adoption_guard
from tests.support import REPO
from tests.support.kustomize import build_overlay, metacontroller_manifests

OVERLAY = "with-metacontroller"
ADDED = [
    "--cache-flush-interval=0",
    "--client-go-qps=100",
    "--client-go-burst=200",
    "--workers=16",
    "--apply-strategy=server-side-apply",
]
LEADER_ELECTION = [
    "--leader-election",
    "--leader-election-namespace=metacontroller",
    "--leader-election-id=metacontroller",
]
# The release's own arguments, its log level lowered to errors and its discovery interval
# lengthened (metacontroller-flags.yaml).
ARGS = ["--zap-log-level=error", "--discovery-interval=5m", *ADDED, *LEADER_ELECTION]
GUARD = "mxjob-children-are-not-adopted"


@pytest.fixture(scope="module")
def fresh_apiserver(
    k8s_binaries: Binaries, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ApiServer]:
    with cluster(k8s_binaries, tmp_path_factory.mktemp("install")) as server:
        yield server


def test_one_command_installs_metacontroller_and_the_hook(
    fresh_apiserver: ApiServer, tmp_path: Path
) -> None:
    manifest = tmp_path / "install.yaml"
    manifest.write_text(build_overlay(OVERLAY))
    # docs/install.md: apply, wait for Metacontroller's CRD, apply again. kubectl maps every
    # object to a served type before it creates any, so the first run creates all but our
    # CompositeController, whose type its CRD brings in that same run.
    first = fresh_apiserver.kubectl("apply", "-f", str(manifest), check=False)
    assert first.returncode == 1
    errors = [line for line in first.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1, first.stderr
    assert 'no matches for kind "CompositeController"' in errors[0]
    crd = "crd/compositecontrollers.metacontroller.k8s.io"
    fresh_apiserver.wait_established(crd)
    second = fresh_apiserver.kubectl("apply", "-f", str(manifest))
    assert "compositecontroller.metacontroller.k8s.io/mxjob-controller created" in second.stdout

    statefulset = fresh_apiserver.get("statefulset", "metacontroller", "--namespace=metacontroller")
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "ghcr.io/metacontroller/metacontroller:v4.17.2"
    assert container["args"] == ARGS
    assert statefulset["spec"]["replicas"] == 2
    budget = fresh_apiserver.get("pdb", "metacontroller", "--namespace=metacontroller")
    assert budget["spec"]["maxUnavailable"] == 1
    assert budget["spec"]["selector"] == statefulset["spec"]["selector"]
    assert (
        fresh_apiserver.get("validatingadmissionpolicy", GUARD)["spec"]["failurePolicy"] == "Fail"
    )
    binding = fresh_apiserver.get("validatingadmissionpolicybinding", GUARD)
    assert binding["spec"]["validationActions"] == ["Deny"]
    controller = fresh_apiserver.get("compositecontroller", "mxjob-controller")
    assert controller["spec"]["hooks"]["sync"]["webhook"]["service"]["namespace"] == "mxjob-system"
    deployment = fresh_apiserver.get("deployment", "mxjob-controller", "--namespace=mxjob-system")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["name"] == "hook"
    crds = {c["metadata"]["name"] for c in fresh_apiserver.get("crd")["items"]}
    assert {"mxjobs.kubeflow.org", "compositecontrollers.metacontroller.k8s.io"} <= crds


def documented_patches() -> list[list[str]]:
    """The `kubectl patch` commands of docs/install.md that add the flags to a running
    Metacontroller: the sizing flags, then leader election ("High availability")."""
    text = (REPO / "docs" / "install.md").read_text()
    found = re.findall(
        r"kubectl -n metacontroller patch statefulset metacontroller --type=json -p '(.*?)'",
        text,
        re.S,
    )
    assert len(found) == 2, "docs/install.md shows no two kubectl patches of Metacontroller"
    return [
        ["-n", "metacontroller", "patch", "statefulset", "metacontroller", "--type=json", "-p", p]
        for p in found
    ]


def documented_ha_steps() -> list[list[str]]:
    """The `kubectl scale` and `kubectl apply -f` lines of docs/install.md's "High
    availability" (the leader election's Role, the second replica, the PodDisruptionBudget; the
    `rollout status` between them needs a kubelet)."""
    text = (REPO / "docs" / "install.md").read_text().split("### High availability")[1]
    lines = [
        line.split()[1:]
        for line in text.splitlines()
        if line.startswith(("kubectl -n metacontroller scale", "kubectl apply -f manifests/"))
    ]
    assert len(lines) == 3, lines
    return lines


def test_two_step_install_gets_the_flags_by_the_documented_patch(
    k8s_binaries: Binaries, tmp_path: Path
) -> None:
    with cluster(k8s_binaries, tmp_path) as server:
        release = server.kubectl("kustomize", str(metacontroller_manifests())).stdout
        server.kubectl("apply", "-f", "-", input=release)
        sizing, leader_election = documented_patches()
        server.kubectl(*sizing)
        install_adoption_guard(server)  # docs/install.md, the same step
        server.kubectl(*leader_election)
        for step in documented_ha_steps():  # its paths are the repository's
            server.kubectl(*[str(REPO / a) if a.startswith("manifests/") else a for a in step])
        statefulset = server.get("statefulset", "metacontroller", "--namespace=metacontroller")
        policy = server.get("validatingadmissionpolicy", GUARD)
        budget = server.get("pdb", "metacontroller", "--namespace=metacontroller")
        role = server.get("role", "metacontroller-leader-election", "--namespace=metacontroller")
    assert [r["verbs"] for r in role["rules"]] == [["create"], ["get", "update"]]
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ARGS, "the same as the one-command install"
    assert statefulset["spec"]["replicas"] == 2
    assert budget["spec"]["maxUnavailable"] == 1
    assert policy["metadata"]["name"] == GUARD
