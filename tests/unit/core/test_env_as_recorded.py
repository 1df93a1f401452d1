"""Every container's process reads the same environment as before MX_CONFIG's shared parts
moved to a ConfigMap, and as under release 0.1.0: every golden case, example and legacy
manifest against its recording."""

import json
from typing import Any

import pytest
import yaml

from app.core.mxnet import kubeenv, mxconfig
from app.core.render import render
from tests.support import FIXTURES, REPO, yamls
from tests.support.golden_cases import CASES
from tests.support.hooked import sync
from tests.support.jobs import NOW

# What each container's process read before MX_CONFIG's shared parts moved to a ConfigMap,
# recorded from the previous version's answers: every golden case, example and legacy manifest.
BEFORE = json.loads((FIXTURES / "env-before-configmap.json").read_text())
# Every variable each container's process read under release 0.1.0's layout (the ConfigMap's
# keys `cluster` and `labels` read through configMapKeyRef, every DMLC_* variable in the
# pod), recorded from that code's answers, sorted by name: the kubelet hands a process its
# variables in no set order (it gathers them in a map), so the order is not part of what a
# process reads.
RELEASED = json.loads((FIXTURES / "env-0.1.0.json").read_text())
# Cases added since a recording: the same job and phases as a recorded one.
SAME_AS = {
    "golden/inline-mx-config-running": "golden/all-running",
    "golden/upgraded-job-running": "golden/all-running",
    "golden/released-job-running": "golden/all-running",
    "golden/released-job-worker-replaced": "golden/worker-replacement-running",
    # Edits of the running job (all-running's pods), kept exactly while the spec is invalid.
    "golden/invalid-spec-running-job-still-invalid": "golden/invalid-spec-running-job",
    "golden/invalid-spec-running-job-fixed": "golden/invalid-spec-running-job",
    "golden/invalid-spec-failed-by-earlier-version": "golden/invalid-spec-running-job",
    # The replica-services annotation changes the Services only: every process reads the same.
    "golden/replica-services-scheduler-running": "golden/all-running",
    "golden/replica-services-switched-to-scheduler": "golden/all-running",
    "golden/replica-services-switched-back-to-all": "golden/all-running",
    "golden/replica-services-invalid-value": "golden/all-running",
}
SHARED = {variable for variable, _ in mxconfig.SHARED_PARTS}


def process_env(children: list[dict[str, Any]], shared: bool = True) -> dict[str, list[list[str]]]:
    """Each pod container's environment as its process starts with it, sorted by name; with
    `shared` False, without the variables that only carry MX_CONFIG's shared parts."""
    config_maps = {c["metadata"]["name"]: c for c in children if c["kind"] == "ConfigMap"}
    out = {}
    for pod in (c for c in children if c["kind"] == "Pod"):
        for each in pod["spec"]["containers"]:
            env = kubeenv.resolve(each, config_maps)
            key = f"{pod['metadata']['name']}/{each['name']}"
            out[key] = sorted([k, v] for k, v in env.items() if shared or k not in SHARED)
    return out


MANIFESTS = sorted([*(REPO / "examples").glob("*.yaml"), *(FIXTURES / "legacy").glob("*.yaml")])
CASE_IDS = {f"golden/{name}": f"golden-{name}" for name in CASES}
SOURCES = [*CASE_IDS, *(str(path.relative_to(REPO)) for path in MANIFESTS)]


def children_of(source: str) -> list[dict[str, Any]]:
    """The hook's children for a golden case or a manifest, computed by its test, not at
    collection, where every pytest-xdist worker would compute them all."""
    if source.startswith("golden/"):
        children: list[dict[str, Any]] = sync(*CASES[source.removeprefix("golden/")]())["children"]
        return children
    return list(yaml.load_all(render((REPO / source).read_text(), NOW), Loader=yamls.LOADER))


@pytest.mark.parametrize("source", SOURCES, ids=lambda source: CASE_IDS.get(source, source))
def test_processes_read_the_same_environment_as_before(source: str) -> None:
    children = children_of(source)
    # Sources with no pod in their answer recorded nothing.
    released = RELEASED[source] if source in RELEASED else RELEASED.get(SAME_AS.get(source), {})
    assert process_env(children) == released
    before = {k: sorted(v) for k, v in BEFORE.get(SAME_AS.get(source, source), {}).items()}
    assert process_env(children, shared=False) == before


def test_every_recorded_source_is_checked() -> None:
    checked = set(SOURCES)
    assert set(BEFORE) <= checked
    assert set(RELEASED) <= checked
