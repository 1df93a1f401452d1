"""docs/development.md, "Adding a child type", followed step by step with a child type of this
file's own (a PodDisruptionBudget per job): defined here and handed to `sync`, its child comes in
the answer named and labelled for the job, ahead of the pods, and the rest of the answer is what
the core gives without it: no core file had to change."""

from dataclasses import dataclass
from typing import Any

from app.core.model import kinds
from app.core.model.seam import ContributionDefaults, Integration, SyncInputs
from app.core.mxnet import names
from app.core.reconcile import sync
from tests.support import REPO
from tests.support import jobs as s

# Step 1: the kind, and its child type as Metacontroller keys it in a sync request.
KIND = "PodDisruptionBudget"
API_VERSION = "policy/v1"
CHILD_TYPE = kinds.child_type(KIND, API_VERSION)


# Step 2: the child, built with `kinds.header` and `names.metadata`: named for the job, in its
# namespace, with the labels of every child of the job.
def budget(inputs: SyncInputs) -> dict[str, Any]:
    """The job's PodDisruptionBudget: none of its pods is evicted by choice."""
    meta = inputs.request.parent.metadata
    labels = names.job_labels(meta.name)
    total = sum(r.replicas for r in inputs.spec.mxReplicaSpecs.values())
    spec = {"minAvailable": total, "selector": {"matchLabels": labels}}
    return kinds.header(KIND, API_VERSION) | {
        "metadata": names.metadata(meta.name, meta.namespace, labels, {}),
        "spec": spec,
    }


# Step 3: its contribution, `seam.ContributionDefaults` for the fixed points it has no part in:
# no report, one child per job ahead of the pods (`job_children`).
@dataclass(frozen=True)
class BudgetContribution(ContributionDefaults):
    child: dict[str, Any]
    report: None = None

    def job_children(self) -> list[dict[str, Any]]:
        return [self.child]


# Step 4: `contribute`: the contribution, or None where the controller does not declare the type.
def contribute(inputs: SyncInputs) -> BudgetContribution | None:
    if not inputs.request.declares(CHILD_TYPE):
        return None
    return BudgetContribution(budget(inputs))


# Step 5: the integration, as the service hands it to every sync (in INTEGRATIONS).
BUDGETS = Integration("budgets", contribute)


def declaring(spec: dict[str, Any]) -> dict[str, Any]:
    """The sync that creates a job's children, its controller declaring the new child type."""
    return s.after_first(s.request(s.mxjob(spec), others={CHILD_TYPE: []}))


def test_the_child_comes_named_and_labelled_for_the_job_ahead_of_its_pods() -> None:
    answer = sync(declaring(s.train_spec()), s.NOW, (BUDGETS,))
    first, *rest = answer["children"]
    assert (first["apiVersion"], first["kind"]) == (API_VERSION, KIND)
    # Metacontroller adds the owner reference to the MXJob: the hook writes none.
    assert first["metadata"] == {
        "name": "mnist",
        "namespace": "default",
        "labels": {names.LABEL_OPERATOR: names.OPERATOR_NAME, names.LABEL_JOB: "mnist"},
    }
    assert first["spec"]["minAvailable"] == 5
    assert {c["kind"] for c in rest} == {kinds.POD, kinds.SERVICE}


def test_the_rest_of_the_answer_is_the_cores_own() -> None:
    request = declaring(s.train_spec())
    with_it = sync(request, s.NOW, (BUDGETS,))
    without = sync(request, s.NOW, ())
    assert with_it | {"children": with_it["children"][1:]} == without


def test_a_controller_that_does_not_declare_the_type_gets_no_such_child() -> None:
    request = s.after_first(s.request(s.mxjob(s.train_spec())))
    assert sync(request, s.NOW, (BUDGETS,)) == sync(request, s.NOW, ())


def test_a_job_without_pods_gets_none_either() -> None:
    suspended = s.train_spec() | {"runPolicy": {"suspend": True}}
    assert sync(declaring(suspended), s.NOW, (BUDGETS,))["children"] == []


def test_no_core_module_names_the_new_kind() -> None:
    core = [p.read_text() for p in (REPO / "app" / "core").rglob("*.py")]
    assert core
    assert not [text for text in core if KIND in text or CHILD_TYPE in text]
