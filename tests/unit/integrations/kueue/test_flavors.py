"""What an admission adds to each replica type's pods (app/integrations/kueue/flavors.py): its
flavors' node labels and tolerations, then its admission checks' updates, merged as Kueue
merges them, or why the pods cannot be made (docs/kueue.md)."""

from typing import Any

import pytest

from app.core.model.spec import MXJobSpec, ReplicaType
from app.integrations.kueue.admission import Admission, PodSetInfo
from app.integrations.kueue.flavors import pod_set_infos
from tests.support.jobs import replica
from tests.support.kueue_jobs import TOLERATION, flavor, related

SPOT = {"key": "spot", "operator": "Exists"}
RELATED = related(
    flavor("on-a", {"pool": "a"}, [TOLERATION]), flavor("spot", {"spot": "1"}, [SPOT])
)


def admitted(flavors: dict[str, list[str]], **updates: PodSetInfo) -> Admission:
    return Admission(True, False, "cq", "", "", flavors, updates)


def spec(template: dict[str, Any] | None = None) -> MXJobSpec:
    worker = replica(2) if template is None else {"replicas": 2, "template": template}
    return MXJobSpec.model_validate({"mxReplicaSpecs": {"Worker": worker}})


@pytest.mark.parametrize(
    ("state", "info"),
    [
        pytest.param(admitted({}), PodSetInfo(), id="no-flavor"),
        pytest.param(admitted({"worker": ["on-a"]}), PodSetInfo({"pool": "a"}, [TOLERATION]),
                     id="one-flavor"),
        pytest.param(admitted({"worker": ["on-a", "spot"]}),
                     PodSetInfo({"pool": "a", "spot": "1"}, [TOLERATION, SPOT]),
                     id="a-flavor-per-resource-merged"),
        pytest.param(admitted({"worker": ["on-a", "on-a"]}), PodSetInfo({"pool": "a"}, [TOLERATION]),
                     id="the-same-toleration-once"),
        pytest.param(admitted({"worker": ["on-a"]},
                              worker=PodSetInfo({"pool": "b"}, [SPOT], {"l": "v"}, {"a": "v"})),
                     PodSetInfo({"pool": "b"}, [TOLERATION, SPOT], {"l": "v"}, {"a": "v"}),
                     id="admission-check-updates-last"),
    ],
)  # fmt: skip
def test_what_the_admission_adds_to_the_pods(state: Admission, info: PodSetInfo) -> None:
    assert pod_set_infos(state, RELATED, spec()) == {ReplicaType.WORKER: info}


@pytest.mark.parametrize(
    ("state", "template", "why"),
    [
        pytest.param(admitted({"worker": ["gone"]}), {},
                     "ResourceFlavor gone assigned to pod set worker is not known",
                     id="unknown-flavor"),
        pytest.param(admitted({"worker": ["on-a"]}), {"spec": {"nodeSelector": {"pool": "z"}}},
                     "the admission of pod set worker sets nodeSelector pool=a, which the pod "
                     "template sets to z", id="node-selector"),
        pytest.param(admitted({}, worker=PodSetInfo(labels={"team": "b"})),
                     {"metadata": {"labels": {"team": "a"}}},
                     "the admission of pod set worker sets label team=b, which the pod template "
                     "sets to a", id="label"),
        pytest.param(admitted({}, worker=PodSetInfo(annotations={"n": "2"})),
                     {"metadata": {"annotations": {"n": "1"}}},
                     "the admission of pod set worker sets annotation n=2, which the pod "
                     "template sets to 1", id="annotation"),
    ],
)  # fmt: skip
def test_why_the_pods_cannot_be_made(state: Admission, template: dict[str, Any], why: str) -> None:
    base = {"spec": {"containers": [{"name": "mxnet", "image": "i"}]}}
    merged = {"metadata": template.get("metadata", {}),
              "spec": base["spec"] | template.get("spec", {})}  # fmt: skip
    assert pod_set_infos(state, RELATED, spec(merged)) == why


def test_a_template_that_agrees_is_no_clash() -> None:
    template = {
        "spec": {"containers": [{"name": "mxnet", "image": "i"}], "nodeSelector": {"pool": "a"}}
    }
    state = admitted({"worker": ["on-a"]})
    assert pod_set_infos(state, RELATED, spec(template)) == {
        ReplicaType.WORKER: PodSetInfo({"pool": "a"}, [TOLERATION])
    }
