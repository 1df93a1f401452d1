"""What Metacontroller last applied, read back from a child's `managedFields` (app/core/observe/applied.py):
its apply strategy `server-side-apply` keeps no last-applied annotation.

tests/fixtures/ssa-children.json holds a job (examples/dist-cpu.yaml) and three of its
children (its ConfigMap, the pod and the Service of worker 0, the pod marked Running through
its status subresource) as a real kube-apiserver v1.32.13 returned them after Metacontroller
v4.17.2, run with `--apply-strategy=server-side-apply`, had created them from the hook's
answer. The real stack checks the same on every child of a running job, under both
strategies (tests/apiserver/test_real_disturbances.py)."""

import copy
import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.model import envelope
from app.core.observe.applied import LAST_APPLIED, applied_configuration, kept_as_observed
from tests.support import FIXTURES
from tests.support import jobs as s
from tests.support.budgets import examples
from tests.support.hooked import sync
from tests.support.resources import as_written

FIXTURE = json.loads((FIXTURES / "ssa-children.json").read_text())
PARENT = FIXTURE["parent"]
UID = PARENT["metadata"]["uid"]
CHILDREN = [(kind, child) for kind, group in FIXTURE["children"].items() for child in group]


def _split(child_type: str) -> tuple[str, str]:
    kind, _, version = child_type.partition(".")
    return version, kind


def _answered() -> dict[tuple[str, str], dict[str, Any]]:
    """The hook's answer for the fixture's job, as Metacontroller applied it."""
    children = {
        child_type: {f"{c['metadata']['namespace']}/{c['metadata']['name']}": c for c in group}
        for child_type, group in FIXTURE["children"].items()
    }
    answer = sync(s.envelope(copy.deepcopy(PARENT), copy.deepcopy(children)), s.NOW)
    return {(c["kind"], c["metadata"]["name"]): as_written(c, PARENT) for c in answer["children"]}


@pytest.mark.parametrize(("child_type", "child"), CHILDREN, ids=[k for k, _ in CHILDREN])
def test_what_the_api_server_recorded_is_what_the_hook_answered(
    child_type: str, child: dict[str, Any]
) -> None:
    version, kind = _split(child_type)
    applied = applied_configuration(child, UID, version, kind)
    assert applied == _answered()[(kind, child["metadata"]["name"])]


def test_the_status_and_what_the_api_server_defaulted_are_left_out() -> None:
    ((_, service),) = [(k, c) for k, c in CHILDREN if k == "Service.v1"]
    ((_, pod),) = [(k, c) for k, c in CHILDREN if k == "Pod.v1"]
    assert "ipFamilies" in service["spec"]
    assert "status" in pod
    applied_service = applied_configuration(service, UID, "v1", "Service")
    applied_pod = applied_configuration(pod, UID, "v1", "Pod")
    assert applied_service is not None
    assert applied_pod is not None
    assert "ipFamilies" not in applied_service["spec"]
    assert "status" not in applied_pod
    assert "dnsPolicy" not in applied_pod["spec"]
    assert "managedFields" not in applied_pod["metadata"]


def _with_entries(child: dict[str, Any], entries: Any) -> dict[str, Any]:
    changed = copy.deepcopy(child)
    changed["metadata"]["managedFields"] = entries
    return changed


def _entry(child: dict[str, Any]) -> dict[str, Any]:
    (entry,) = [e for e in child["metadata"]["managedFields"] if e["operation"] == "Apply"]
    return copy.deepcopy(entry)


SERVICE = next(c for k, c in CHILDREN if k == "Service.v1")


@pytest.mark.parametrize(
    "entries",
    [
        pytest.param(lambda e: [], id="no-entries"),
        pytest.param(lambda e: "not a list", id="not-a-list"),
        pytest.param(lambda e: [e | {"operation": "Update"}], id="an-update-not-an-apply"),
        pytest.param(lambda e: [e, copy.deepcopy(e) | {"manager": "other"}], id="two-appliers"),
        pytest.param(
            lambda e: [e | {"fieldsV1": {"f:spec": e["fieldsV1"]["f:spec"]}}],
            id="another-owners-apply",
        ),
        pytest.param(
            lambda e: [e | {"fieldsV1": e["fieldsV1"] | {"f:spec": {"x:odd": {}}}}],
            id="an-unknown-path-element",
        ),
        pytest.param(
            lambda e: [e | {"fieldsV1": e["fieldsV1"] | {"f:spec": {"f:clusterIP": {"f:a": {}}}}}],
            id="a-path-under-a-scalar",
        ),
        pytest.param(
            lambda e: [e | {"fieldsV1": e["fieldsV1"] | {"f:spec": {"f:ports": {"k:{not": {}}}}}],
            id="a-key-not-json",
        ),
        pytest.param(
            lambda e: [
                e | {"fieldsV1": {"f:metadata": {"f:ownerReferences": {"k:{not": {}, "k:[1]": {}}}}}
            ],
            id="owner-keys-not-json-objects",
        ),
    ],
)
def test_an_entry_that_cannot_be_read_gives_nothing(entries: Any) -> None:
    """The hook then falls back on the observed child's identity, labels and spec."""
    child = _with_entries(SERVICE, entries(_entry(SERVICE)))
    assert applied_configuration(child, UID, "v1", "Service") is None


def test_the_entry_is_found_whatever_its_field_manager_is_called() -> None:
    renamed = _entry(SERVICE) | {"manager": "metacontroller-blue"}
    child = _with_entries(SERVICE, [*SERVICE["metadata"]["managedFields"][1:], renamed])
    assert applied_configuration(child, UID, "v1", "Service") == applied_configuration(
        SERVICE, UID, "v1", "Service"
    )


def test_list_items_by_key_by_value_and_by_index() -> None:
    child = {
        "metadata": {
            "name": "c",
            "managedFields": [
                {
                    "operation": "Apply",
                    "fieldsV1": {
                        "f:metadata": {"f:ownerReferences": {f'k:{{"uid":"{UID}"}}': {}}},
                        "f:spec": {
                            "f:finalizers": {'v:"b"': {}},
                            "f:args": {"i:1": {}},
                            "f:ports": {'k:{"port":1,"protocol":"TCP"}': {".": {}, "f:port": {}}},
                        },
                    },
                }
            ],
        },
        "spec": {
            "finalizers": ["a", "b"],
            "args": ["x", "y"],
            "ports": [
                {"port": 1, "protocol": "TCP", "name": "p"},
                {"port": 2, "protocol": "TCP", "name": "q"},
            ],
        },
    }
    applied = applied_configuration(child, UID, "v1", "Thing")
    assert applied == {
        "apiVersion": "v1",
        "kind": "Thing",
        "metadata": {"name": "c"},
        "spec": {"finalizers": ["b"], "args": ["y"], "ports": [{"port": 1}]},
    }


def _deep(depth: int) -> tuple[dict[str, Any], dict[str, Any]]:
    fields: dict[str, Any] = {}
    value: dict[str, Any] = {}
    for _ in range(depth):
        fields, value = {"f:a": fields}, {"a": value}
    return {"f:metadata": {"f:ownerReferences": {f'k:{{"uid":"{UID}"}}': {}}}} | fields, value


def test_a_deeply_nested_entry_is_refused_not_a_crash() -> None:
    fields, value = _deep(5000)
    child = {
        "metadata": {"name": "c", "managedFields": [{"operation": "Apply", "fieldsV1": fields}]}
    }
    child |= value
    assert applied_configuration(child, UID, "v1", "Thing") is None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)
FIELDS: st.SearchStrategy[dict[str, Any]] = st.recursive(
    st.just({}),
    lambda inner: st.dictionaries(
        st.sampled_from(
            ["f:spec", "f:a", "f:ports", ".", 'k:{"port":1}', "v:1", "i:0", "i:x", "k:[]"]
        ),
        inner,
        max_size=4,
    ),
    max_leaves=20,
)


@settings(max_examples=examples(300), deadline=None)
@given(value=JSON, fields=FIELDS)
def test_any_entry_over_any_object_gives_an_object_or_nothing(value: Any, fields: Any) -> None:
    child = {
        "metadata": {
            "name": "c",
            "managedFields": [
                {
                    "operation": "Apply",
                    "fieldsV1": {"f:metadata": {"f:ownerReferences": {f'k:{{"uid":"{UID}"}}': {}}}}
                    | fields,
                }
            ],
        },
        "spec": value,
    }
    applied = applied_configuration(child, UID, "v1", "Thing")
    assert applied is None or (applied["kind"], applied["metadata"]["name"]) == ("Thing", "c")


def test_a_job_with_an_invalid_spec_and_unreadable_entries_is_answered() -> None:
    """Through the core: the child is echoed as observed (identity, labels, spec)."""
    parent = copy.deepcopy(PARENT)
    parent["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = -1
    broken = _with_entries(SERVICE, [_entry(SERVICE) | {"fieldsV1": {"f:metadata": "x"}}])
    broken["metadata"]["managedFields"].append(
        {"operation": "Apply", "fieldsV1": {"f:metadata": {"f:ownerReferences": {"k:{": {}}}}}
    )
    key = f"{broken['metadata']['namespace']}/{broken['metadata']['name']}"
    answer = sync(s.envelope(parent, {"Service.v1": {key: broken}}), s.NOW)
    (echoed,) = answer["children"]
    assert echoed["spec"] == SERVICE["spec"]
    assert "managedFields" not in echoed["metadata"]


APPLIED_SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "mnist-worker-0", "namespace": "default"},
    "spec": {"clusterIP": "None"},
}


def service(**meta: Any) -> dict[str, Any]:
    """A Service as observed: the server's fields beside what the hook asked for."""
    metadata = {"name": "mnist-worker-0", "namespace": "default", "uid": "u"} | meta
    return {"metadata": metadata, "spec": {"clusterIP": "None", "ports": []}, "status": {}}


def annotated(last: dict[str, Any] | str) -> dict[str, Any]:
    text = last if isinstance(last, str) else orjson.dumps(last).decode()
    return service(annotations={LAST_APPLIED: text, "mine": "1"}, labels={"a": "b"})


AS_IT_IS = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {
        "name": "mnist-worker-0",
        "namespace": "default",
        "labels": {"a": "b"},
        "annotations": {"mine": "1"},
    },
    "spec": {"clusterIP": "None", "ports": []},
}


# An observed child as its own desired state, which changes nothing: an invalid spec's answer
# (docs/behaviour.md#validation).
@pytest.mark.parametrize(
    ("child", "kept"),
    [
        pytest.param(annotated(APPLIED_SERVICE), APPLIED_SERVICE, id="what-was-last-applied"),
        pytest.param(
            annotated(APPLIED_SERVICE | {"metadata": {"name": "another"}}),
            AS_IT_IS,
            id="last-applied-of-another-child",
        ),
        pytest.param(annotated("{not json"), AS_IT_IS, id="last-applied-not-json"),
        pytest.param(annotated("[]"), AS_IT_IS, id="last-applied-not-an-object"),
        pytest.param(
            service(annotations={LAST_APPLIED: 1}),
            AS_IT_IS | {"metadata": {"name": "mnist-worker-0", "namespace": "default"}},
            id="identity-and-spec",
        ),
    ],
)
def test_an_invalid_job_keeps_each_child_as_it_is(
    child: dict[str, Any], kept: dict[str, Any]
) -> None:
    request = envelope.read_request(s.request(s.mxjob({}), services=[child]))
    assert kept_as_observed(request) == [kept]
