"""The control plane's guarantees (docs/security.md, "Layers"; the checks and what each means:
tests/support/control_plane.py), on the real `kubectl kustomize` of every overlay, alone and
with each component, and on the real `helm template` of the chart, by default and with its
options on: the control-plane PriorityClass on every workload, Metacontroller spread over nodes,
read-only root file systems, budgets that never block a drain, no aggregation into the built-in
roles, a hook that opens no connection and a Metacontroller nothing reaches, and the Kueue status
writer narrowed by its admission policy. Each check is shown to fail: on Metacontroller's release
as it is, and on shipped builds with one thing undone. What the writer's policy refuses, on the
real API server: tests/apiserver/test_kueue_pods_ready.py."""

import copy
import functools
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import REPO, yamls
from tests.support.control_plane import (
    PORTS_TRIED,
    PRIORITY_CLASS,
    WRITER,
    Objects,
    evictions_allowed,
    problems,
    workloads,
)
from tests.support.kustomize import RELEASE_COPY, documents, overlay_objects
from tests.support.netpol import Pod, pods, reachable
from tests.support.overlays import LAYOUT

CHART = REPO / "charts" / "mxjob-controller"
COMPONENTS = sorted(p.name for p in (REPO / "manifests" / "components").iterdir())
# The components an overlay has already: adding one again would add its objects twice.
BUILT_IN = {"kueue": {"kueue", "kueue-status"}, "with-metacontroller": {"adoption-guard"}}
BUILDS = [(o,) for o in LAYOUT] + [
    (o, c) for o in LAYOUT for c in COMPONENTS if c not in BUILT_IN.get(o, set())
]
SCRAPERS = r"monitoring.namespaceSelector.kubernetes\.io/metadata\.name=monitoring"
OPTIONS = ("namespace.create", "adoptionGuard", "kueue", "ttlController.enabled", "events",
           "kubeflowRoles")  # fmt: skip
# Every option of the chart on (one hook replica, for the budget), in another namespace.
ALL_ON = (*(a for o in OPTIONS for a in ("--set", f"{o}=true")),
          "--set", "gang=volcano", "--set", "replicas=1", "--set-string", SCRAPERS)  # fmt: skip
HELM_LABELS = {"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
               "app.kubernetes.io/version"}  # fmt: skip


@pytest.mark.parametrize("build", BUILDS, ids="+".join)
def test_every_build_keeps_the_guarantees(build: tuple[str, ...]) -> None:
    assert problems(overlay_objects(*build)) == []


def the(objects: Objects, kind: str, name: str) -> dict[str, Any]:
    (found,) = (o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)
    return found


def test_the_checks_have_something_to_check() -> None:
    """Metacontroller, its spread and its policy are in with-metacontroller; the monitoring
    component opens its metrics port to `monitoring`, and nothing else."""
    objects = overlay_objects("with-metacontroller")
    names = {(o["kind"], o["metadata"]["name"]) for o in workloads(objects)}
    assert names == {("StatefulSet", "metacontroller"), ("Deployment", "mxjob-controller")}
    for workload in workloads(objects):
        assert workload["spec"]["template"]["spec"]["priorityClassName"] == PRIORITY_CLASS
    statefulset = the(objects, "StatefulSet", "metacontroller")
    (constraint,) = statefulset["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert constraint["whenUnsatisfiable"] == "DoNotSchedule"
    assert the(objects, "NetworkPolicy", "metacontroller")["spec"]["ingress"] == []
    assert not [o for o in objects if o["metadata"]["name"].startswith("aggregate-")]
    monitored = overlay_objects("with-metacontroller", "networkpolicy-monitoring")
    policies = [o for o in monitored if o["kind"] == "NetworkPolicy"]
    (metacontroller,) = (p for k, p in pods(monitored).items() if "metacontroller" in k)
    assert reachable(policies, Pod("monitoring", {}), metacontroller, PORTS_TRIED) == {9999}
    assert the(overlay_objects("kueue"), "ValidatingAdmissionPolicy", WRITER)


def test_metacontrollers_release_as_it_is_fails() -> None:
    """Without the overlay: no priority, one replica on any node, a writable root, every pod
    may connect, and its roles joining view, edit and admin."""
    found = "\n".join(problems(documents(RELEASE_COPY)))
    for expected in (
        f"no PriorityClass {PRIORITY_CLASS}",
        "StatefulSet/metacontroller/metacontroller: priorityClassName None",
        "no hard spread over kubernetes.io/hostname",
        "fewer than two replicas",
        "container metacontroller writable",
        "aggregate-metacontroller-view: joins the built-in roles",
        "aggregate-metacontroller-edit: a role of Metacontroller's that aggregates",
        "StatefulSet/metacontroller/metacontroller: reachable from Pod(namespace='tenant'",
    ):
        assert expected in found


Plant = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
DROP: Any = object()


def at(kind: str, name: str, path: tuple[Any, ...], value: Any = DROP) -> Plant:
    """A planted fault: the field at `path` of the build's object of that kind and name set to
    `value` (appended to the list for a last key "+", removed without a value)."""

    def plant(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        target: Any = the(objects, kind, name)
        *parents, last = path
        for key in parents:
            target = target[key]
        if value is DROP:
            del target[last]
        elif last == "+":
            target.append(value)
        else:
            target[last] = value
        return objects

    return plant


def gone(kind: str, name: str) -> Plant:
    return lambda objects: [
        o for o in objects if (o["kind"], o["metadata"]["name"]) != (kind, name)
    ]


SA, WM, KF = ("standalone",), ("with-metacontroller",), ("kubeflow",)
KQ = ("kubeflow", "kueue", "kueue-status")
POD = ("spec", "template", "spec")
SPREAD = (*POD, "topologySpreadConstraints", 0)
HOOK, MC = ("Deployment", "mxjob-controller"), ("StatefulSet", "metacontroller")
PC, PDB = ("PriorityClass", PRIORITY_CLASS), ("PodDisruptionBudget", "mxjob-controller")
HOOK_POLICY, VAP = ("NetworkPolicy", "mxjob-controller"), "ValidatingAdmissionPolicy"
MONITORING = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
WRONG_NS = f"request.userInfo.username == 'system:serviceaccount:mxjob-system:{WRITER}'"
# name: (build, faults planted, a problem found names this)
PLANTED: dict[str, tuple[tuple[str, ...], list[Plant], str]] = {
    "class-unnamed": (SA, [at(*HOOK, (*POD, "priorityClassName"))],
                      "Deployment/mxjob-system/mxjob-controller: priorityClassName None"),
    "class-missing": (SA, [gone(*PC)], f"no PriorityClass {PRIORITY_CLASS}"),
    "class-default": (SA, [at(*PC, ("globalDefault",), True)], "globalDefault True"),
    "class-critical": (SA, [at(*PC, ("value",), 2_000_000_000)], "value 2000000000"),
    "spread-soft": (WM, [at(*MC, (*SPREAD, "whenUnsatisfiable"), "ScheduleAnyway")],
                    "no hard spread"),
    "spread-counts-tainted-nodes": (WM, [at(*MC, (*SPREAD, "nodeTaintsPolicy"))],
                                    "no hard spread"),
    "writable-root": (WM, [at(*MC, (*POD, "containers", 0, "securityContext",
                                    "readOnlyRootFilesystem"))], "metacontroller writable"),
    "one-replica-min-available": (SA, [at(*HOOK, ("spec", "replicas"), 1),
                                       at(*PDB, ("spec", "maxUnavailable")),
                                       at(*PDB, ("spec", "minAvailable"), 1)],
                                  "blocks every drain"),
    "evicts-both": (SA, [at(*PDB, ("spec", "maxUnavailable"), "100%")], "evict all"),
    "view-aggregate": (KF, [at("ClusterRole", "kubeflow-mxjob-view", ("metadata", "labels",
                        "rbac.authorization.k8s.io/aggregate-to-view"), "true")],
                       "joins the built-in roles"),
    "aggregates-pods": (KF, [at("ClusterRole", "kubeflow-mxjob-edit", ("rules", "+"),
                                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]})],
                        "aggregates more than MXJobs"),
    "hook-egress-rule": (SA, [at(*HOOK_POLICY, ("spec", "egress"), [{}])],
                         "the hook may open connections"),
    "hook-egress-not-isolated": (SA, [at(*HOOK_POLICY, ("spec", "policyTypes"), ["Ingress"])],
                                 "the hook may open connections"),
    "metacontroller-open": (WM, [gone("NetworkPolicy", "metacontroller")],
                            "reachable from Pod(namespace='tenant'"),
    "metacontroller-probes-open": (WM, [at("NetworkPolicy", "metacontroller", ("spec", "ingress",
                                   "+"), {"from": [MONITORING], "ports": [{"port": 8081}]})],
                                   "reachable from Pod(namespace='monitoring'"),
    "writer-policy-not-rewritten": (KQ, [at(VAP, WRITER, ("spec", "matchConditions", 0,
                                    "expression"), WRONG_NS)],
                                    f"not system:serviceaccount:kubeflow:{WRITER}"),
    "writer-policy-warns": (KQ, [at(f"{VAP}Binding", WRITER, ("spec", "validationActions"),
                                    ["Warn"])], f"{VAP}Binding/{WRITER}"),
    "writer-policy-gone": (KQ, [gone(VAP, WRITER)], "without its admission policy"),
}  # fmt: skip


@pytest.mark.parametrize(("build", "plants", "expected"), PLANTED.values(), ids=PLANTED)
def test_a_planted_fault_is_found(
    build: tuple[str, ...], plants: list[Plant], expected: str
) -> None:
    objects = list(overlay_objects(*build))
    assert problems(objects) == []
    for plant in plants:
        objects = plant(objects)
    found = problems(objects)
    assert [f for f in found if expected in f], found


@pytest.fixture(scope="module")
def render(go_tool: Callable[[str], Path]) -> Callable[..., tuple[dict[str, Any], ...]]:
    helm = str(go_tool("helm"))

    @functools.cache
    def template(namespace: str, *values: str) -> tuple[dict[str, Any], ...]:
        done = subprocess.run(
            [helm, "template", "mxjob-controller", str(CHART), "--namespace", namespace, *values],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return tuple(d for d in yaml.safe_load_all(done.stdout) if d)

    return template


@pytest.mark.slow
@pytest.mark.parametrize(("namespace", "values"), [("mxjob-system", ()), ("ml", ALL_ON)],
                         ids=["default", "options-on"])  # fmt: skip
def test_the_chart_keeps_the_guarantees(
    render: Callable[..., Objects], namespace: str, values: tuple[str, ...]
) -> None:
    objects = render(namespace, *values)
    assert problems(objects) == []
    assert evictions_allowed(the(objects, "PodDisruptionBudget", "mxjob-controller"), 1) == 1
    writers = [o for o in objects if o["metadata"]["name"] == WRITER]
    assert len(writers) == (7 if values else 0)  # with kueue: the writer and its policy


def without_helm_labels(obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    labels = obj["metadata"]["labels"]
    assert set(labels) >= HELM_LABELS
    obj["metadata"]["labels"] = {k: v for k, v in labels.items() if k not in HELM_LABELS}
    return obj


@pytest.mark.slow
def test_the_chart_can_create_the_restricted_namespace_and_the_adoption_guard(
    render: Callable[..., Objects],
) -> None:
    """As the standalone overlay creates its namespace and with-metacontroller adds the guard;
    neither by default."""
    kinds = {o["kind"] for o in render("mxjob-system")}
    assert not kinds & {"Namespace", "ValidatingAdmissionPolicy"}
    objects = render("ml", *ALL_ON)
    namespace = without_helm_labels(the(objects, "Namespace", "ml"))
    expected = yamls.load((REPO / "manifests/overlays/standalone/namespace.yaml").read_text())
    expected["metadata"] |= {"name": "ml", "annotations": {"helm.sh/resource-policy": "keep"}}
    assert namespace == expected
    guard = yamls.load_all((REPO / "manifests/components/adoption-guard/policy.yaml").read_text())
    for obj in guard:
        assert without_helm_labels(the(objects, obj["kind"], obj["metadata"]["name"])) == obj


def test_the_chart_values_are_documented() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert (values["namespace"], values["adoptionGuard"]) == ({"create": False}, False)
    section = (REPO / "docs" / "install.md").read_text().split("\n## Helm\n")[1].split("\n## ")[0]
    for key in ("namespace.create", "adoptionGuard"):
        assert f"| `{key}` |" in section, key
    assert "--take-ownership" in section
