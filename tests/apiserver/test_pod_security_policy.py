"""The pod-security component (manifests/components/pod-security) on the real API server: an
MXJob is refused at admission exactly when the API server's own Pod Security admission would
refuse the pods of its templates, in namespaces enforcing `baseline` and `restricted`, with a
message naming the field; the platform's allow-lists refuse what they leave out; every example
is admitted. The binding is scoped to this module's namespaces, so the session's other tests
run without it."""

import copy
import functools
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from app.cli import admission, podsecurity
from localcluster.apiserver import ApiServer
from localcluster.crds import install_crds
from tests.support import REPO
from tests.support.podsecurity_cases import CASES, EXAMPLES, JOB_EXAMPLES, Case

COMPONENT = REPO / "manifests" / "components" / "pod-security"
BASE = yaml.safe_load((EXAMPLES / "single-worker.yaml").read_text())
LEVELS = ("baseline", "restricted")
MARK = f"pod-security-{uuid.uuid4().hex[:8]}"
POLICY_NS = f"mxjob-policy-{MARK[-8:]}"


def objects() -> list[dict[str, Any]]:
    """The component's objects, the ConfigMap in this module's namespace and the binding scoped
    to the namespaces this module labels."""
    docs = [d for p in sorted(COMPONENT.glob("*.yaml")) if p.name != "kustomization.yaml"
            for d in yaml.safe_load_all(p.read_text()) if d]  # fmt: skip
    for doc in docs:
        if doc["kind"] == "ConfigMap":
            doc["metadata"]["namespace"] = POLICY_NS
        if doc["kind"] == "ValidatingAdmissionPolicyBinding":
            doc["spec"]["paramRef"]["namespace"] = POLICY_NS
            doc["spec"]["matchResources"] = {
                "namespaceSelector": {"matchLabels": {"mxjob-test": MARK}}
            }
    return docs


@pytest.fixture(scope="module")
def levels(apiserver: ApiServer) -> dict[str, str]:
    """A namespace per level, and the policy installed and in force (a policy takes effect a
    moment after its creation: wait until it refuses a privileged job)."""
    install_crds(apiserver)
    names = {level: f"{level}-{MARK}" for level in LEVELS}
    apiserver.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": POLICY_NS}})
    for level, name in names.items():
        labels = {"mxjob-test": MARK, "pod-security.kubernetes.io/enforce": level}
        apiserver.apply({"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": name, "labels": labels}})  # fmt: skip
    apiserver.apply(*objects())
    privileged = with_worker(
        lambda s: s["containers"][0]["securityContext"].update(privileged=True)
    )
    for _ in range(100):
        if "mxjob-pod-security" in create(apiserver, privileged, names["baseline"])[1]:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the policy never took effect")
    return names


def with_worker(
    change: Callable[[dict[str, Any]], Any], job: dict[str, Any] = BASE
) -> dict[str, Any]:
    job = copy.deepcopy(job)
    change(job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"])
    job["metadata"]["name"] = f"job-{uuid.uuid4().hex[:6]}"
    return job


def create(apiserver: ApiServer, document: dict[str, Any], namespace: str) -> tuple[bool, str]:
    """Whether the API server admits `document` in `namespace` (a server-side dry run, on
    which admission runs), and its message."""
    done = apiserver.kubectl(
        "create", "--dry-run=server", "-n", namespace, "-o", "name", "-f", "-",
        input=yaml.safe_dump(document), check=False,
    )  # fmt: skip
    return done.returncode == 0, done.stderr.strip()


def pod(job: dict[str, Any]) -> dict[str, Any]:
    """The Worker's pod as far as Pod Security can tell (the hook adds env, labels and
    ConfigMap volumes, all of which every level admits: test_pod_security.py)."""
    template = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]
    metadata = {
        "name": "pod",
        **{k: v for k, v in template.get("metadata", {}).items() if k == "annotations"},
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
@pytest.mark.parametrize("level", LEVELS)
def test_the_policy_refuses_what_pod_security_refuses(
    apiserver: ApiServer, levels: dict[str, str], case: Case, level: str
) -> None:
    job = with_worker(case.change)
    pod_admitted, pod_message = create(apiserver, pod(job), levels[level])
    job_admitted, message = create(apiserver, job, levels[level])
    assert job_admitted == pod_admitted, (message, pod_message)
    assert pod_admitted == (level not in case.refused_at), pod_message
    if not job_admitted:
        assert f"spec.mxReplicaSpecs.Worker.template.{case.field}" in message, message
        assert f"enforces Pod Security level {level}" in message, message
    # render --pod-security evaluates the same policy: the same verdict, and the message of the
    # first validation broken, the one the API server gives, first of render's (which lists all).
    rendered = podsecurity.refusals(admission.admit(job).job, levels[level], level)
    assert bool(rendered) != job_admitted
    assert not rendered or rendered[0] in message, (rendered, message)


@pytest.mark.parametrize("example", JOB_EXAMPLES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_example_is_admitted(
    apiserver: ApiServer, levels: dict[str, str], example: Any
) -> None:
    for job in yaml.safe_load_all(example.read_text()):
        if job and job.get("kind") == "MXJob":
            for namespace in levels.values():
                admitted, message = create(apiserver, job, namespace)
                assert admitted, message


LISTS = {"serviceAccountNames": "default, trainer", "nodeNames": "", "schedulerNames": "volcano",
         "priorityClassNames": "batch", "tolerationKeys": "nvidia.com/gpu"}  # fmt: skip
TOLERATE_ALL = [{"operator": "Exists"}]
# (field set on the Worker's pod spec, a value the lists above refuse, one they allow)
LISTED = [
    ("serviceAccountName", "admin", "trainer"),
    ("serviceAccount", "admin", "default"),
    ("nodeName", "node-1", ""),
    ("schedulerName", "default-scheduler", "volcano"),
    ("priorityClassName", "system-node-critical", "batch"),
    ("tolerations", TOLERATE_ALL, [{"key": "nvidia.com/gpu", "operator": "Exists"}]),
]


@pytest.fixture
def allow_lists(apiserver: ApiServer, levels: dict[str, str]) -> Any:
    """The ConfigMap's allow-lists set as LISTS for one test, then as shipped again."""
    (shipped,) = [d for d in objects() if d["kind"] == "ConfigMap"]
    apiserver.apply(shipped | {"data": LISTS})
    yield
    apiserver.kubectl("replace", "-f", "-", input=yaml.safe_dump(shipped))


def set_field(field: str, value: Any, spec: dict[str, Any]) -> None:
    spec[field] = value


@pytest.mark.parametrize(("field", "refused", "allowed"), LISTED, ids=[c[0] for c in LISTED])
def test_the_allow_lists_refuse_what_they_leave_out(
    apiserver: ApiServer,
    levels: dict[str, str],
    allow_lists: Any,
    field: str,
    refused: Any,
    allowed: Any,
) -> None:
    shown = "serviceAccountName" if field == "serviceAccount" else field
    for value, admit in ((refused, False), (allowed, True)):
        job = with_worker(functools.partial(set_field, field, value))
        for _ in range(50):  # the new ConfigMap reaches the policy's informer a moment later
            admitted, message = create(apiserver, job, levels["baseline"])
            if admitted == admit:
                break
            time.sleep(0.1)
        assert admitted == admit, message
        if not admit:
            assert f"spec.mxReplicaSpecs.Worker.template.spec.{shown}: must" in message, message
            assert f"(the allow-list mxjob-pod-policy in {POLICY_NS})" in message, message


def test_the_shipped_allow_list_refuses_a_node_name(
    apiserver: ApiServer, levels: dict[str, str]
) -> None:
    admitted, message = create(
        apiserver, with_worker(lambda s: s.update(nodeName="n1")), levels["baseline"]
    )
    assert not admitted
    assert "spec.mxReplicaSpecs.Worker.template.spec.nodeName: must be unset" in message, message


def test_the_policy_leaves_an_update_alone_that_keeps_the_templates(
    apiserver: ApiServer, levels: dict[str, str]
) -> None:
    """A job created before its namespace enforced a level can still be labelled, and its
    finalizers removed (Metacontroller's, at deletion), while its templates stay as they are."""
    name = f"old-{uuid.uuid4().hex[:6]}"
    namespace = f"later-{MARK}"
    apiserver.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    job = with_worker(lambda s: s.update(hostNetwork=True))
    job["metadata"]["name"] = name
    apiserver.kubectl("create", "-n", namespace, "-f", "-", input=yaml.safe_dump(job))
    labels = {"mxjob-test": MARK, "pod-security.kubernetes.io/enforce": "baseline"}
    apiserver.kubectl("label", "namespace", namespace, *(f"{k}={v}" for k, v in labels.items()),
                      "--overwrite")  # fmt: skip
    for _ in range(50):  # refused once the binding sees the namespace's new labels
        if "hostNetwork" in create(apiserver, job | {"metadata": {"name": "probe"}}, namespace)[1]:
            break
        time.sleep(0.1)
    apiserver.kubectl("label", "mxjob", "-n", namespace, name, "team=a")
    edit = apiserver.kubectl("patch", "mxjob", "-n", namespace, name, "--type=merge", "-p",
                             '{"spec":{"mxReplicaSpecs":{"Worker":{"template":{"metadata":{"labels":{"a":"b"}}}}}}}', check=False)  # fmt: skip
    assert edit.returncode != 0
    assert "spec.hostNetwork: must not be true" in edit.stderr, edit.stderr
