"""Random mutations of a sync request for the fuzz tests: odd values (huge numbers, unicode
digits, odd text, nested junk) at the fields the hook reads, or anywhere."""

import copy
from typing import Any

from hypothesis import strategies as st

from app.core.mxnet import names
from tests.support import jobs as s
from tests.support import odd_digits
from tests.support.fuzz_requests import BASES, built

HUGE = st.sampled_from([2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 10**30, -(2**63)])
# Digits that are not ASCII: str.isdigit() is true for all of them, int() refuses some.
UNICODE_DIGITS = list(odd_digits.UNICODE_DIGITS.values())
ODD_TEXT = st.sampled_from(
    [
        *["", " ", "Worker", "WORKER", "ünïcødé-名前", "\u0000", "🙂" * 70, "a" * 300, "-1", "1e3"],
        *UNICODE_DIGITS,
    ]
)
ODD_SCALAR = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | HUGE
    | st.floats(allow_nan=False, allow_infinity=False)
    | ODD_TEXT
    | st.text(max_size=12)
)
ODD = st.recursive(
    ODD_SCALAR,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
ODD_STATUS = st.fixed_dictionaries(
    {},
    optional={
        "phase": st.sampled_from(["Running", "Failed", "Succeeded", "Unknown", "", "running"])
        | ODD_SCALAR,
        "reason": st.sampled_from(["Evicted", "OOMKilled", "NodeLost"]) | ODD_SCALAR,
        "containerStatuses": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "name": st.sampled_from(["mxnet", "sidecar"]) | ODD_SCALAR,
                    "restartCount": st.integers(-3, 3) | HUGE | ODD_SCALAR,
                    "state": st.fixed_dictionaries(
                        {"terminated": st.fixed_dictionaries({"exitCode": HUGE | ODD_SCALAR})}
                    )
                    | ODD,
                },
            )
            | ODD,
            max_size=3,
        )
        | ODD,
    },
)


# Fields the hook reads, where an odd value is most likely to matter.
FIELDS = [
    ("parent", "spec", "runPolicy", "activeDeadlineSeconds"),
    ("parent", "spec", "runPolicy", "ttlSecondsAfterFinished"),
    ("parent", "spec", "runPolicy", "backoffLimit"),
    ("parent", "spec", "runPolicy", "suspend"),
    ("parent", "spec", "runPolicy", "cleanPodPolicy"),
    ("parent", "spec", "runPolicy", "schedulingPolicy", "minAvailable"),
    ("parent", "spec", "activeDeadlineSeconds"),
    ("parent", "spec", "jobMode"),
    ("parent", "spec", "mxReplicaSpecs", "Worker", "replicas"),
    ("parent", "spec", "mxReplicaSpecs", "Worker", "restartPolicy"),
    ("parent", "spec", "mxReplicaSpecs", "Worker", "template", "metadata", "labels"),
    ("parent", "spec", "mxReplicaSpecs", "Worker", "template", "spec", "containers"),
    ("parent", "status", "startTime"),
    ("parent", "status", "completionTime"),
    ("parent", "status", "conditions"),
    ("parent", "metadata", "namespace"),
]
POD_FIELDS = [
    ("metadata", "labels", names.LABEL_INDEX),
    ("metadata", "labels", names.LABEL_ATTEMPT),
    ("metadata", "labels", names.LABEL_TYPE),
    ("metadata", "labels", names.LABEL_JOB),
    ("metadata", "annotations", names.ANNOTATION_RESTARTS),
    ("metadata", "name"),
]
SERVICE_FIELDS = [
    ("metadata", "annotations", names.LABEL_ATTEMPT),
    ("metadata", "annotations", names.ANNOTATION_RESTARTS),
    ("metadata", "labels", names.LABEL_INDEX),
]


def set_at(doc: Any, path: tuple[Any, ...], value: Any) -> bool:
    """Set a value at a path of dict keys, creating missing dicts; False where a step is
    not a dict."""
    for key in path[:-1]:
        if not isinstance(doc, dict):
            return False
        doc = doc.setdefault(key, {})
    if not isinstance(doc, dict):
        return False
    doc[path[-1]] = value
    return True


def _paths(doc: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into the document, the root's children first."""
    out = []
    items = (
        doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else []
    )
    for key, value in items:
        out.append((*at, key))
        out += _paths(value, (*at, key))
    return out


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def pods_in(request: dict[str, Any]) -> list[Any]:
    group = s.dig(request, "children", "Pod.v1")
    return list(group.values()) if isinstance(group, dict) else []


def _services(request: dict[str, Any]) -> list[Any]:
    group = s.dig(request, "children", "Service.v1")
    return list(group.values()) if isinstance(group, dict) else []


KINDS = [
    "delete",
    "replace",
    "add",
    "case-duplicate",
    "name",
    "pod-status",
    "field",
    "pod-field",
    "service-field",
]


def _at_a_field(draw: st.DrawFn, request: dict[str, Any], kind: str, value: Any) -> str | None:
    """A field the hook reads set to `value`, in the job, a pod or a Service; None where
    the kind is another or the request has no such place."""
    if kind == "field":
        path = draw(st.sampled_from(FIELDS))
        if set_at(request, path, value):
            return f"field {path} = {value!r}"
    if kind == "pod-field" and pods_in(request):
        pod, path = draw(st.sampled_from(pods_in(request))), draw(st.sampled_from(POD_FIELDS))
        if set_at(pod, path, value):
            return f"pod field {path} = {value!r}"
    if kind == "service-field" and _services(request):
        service = draw(st.sampled_from(_services(request)))
        path = draw(st.sampled_from(SERVICE_FIELDS))
        if set_at(service, path, value):
            return f"service field {path} = {value!r}"
    return None


def _of_the_job(draw: st.DrawFn, request: dict[str, Any], kind: str) -> str | None:
    """A replica spec twinned in another case, an odd job name or an odd pod status; None
    where the kind is another or the request has no such place."""
    if kind == "case-duplicate":
        specs = s.dig(request, "parent", "spec", "mxReplicaSpecs")
        if isinstance(specs, dict) and specs:
            key = draw(st.sampled_from(sorted(specs)))
            twin = draw(st.sampled_from([key.lower(), key.upper(), key.swapcase()]))
            specs[twin] = copy.deepcopy(specs[key])
            return f"case-duplicate {key} as {twin}"
    meta = s.dig(request, "parent", "metadata")
    if kind == "name" and isinstance(meta, dict):
        meta["name"] = draw(ODD_TEXT | st.text(min_size=1, max_size=80))
        return f"name {meta['name']!r}"
    if kind == "pod-status" and pods_in(request):
        pod = draw(st.sampled_from(pods_in(request)))
        if isinstance(pod, dict):
            pod["status"] = draw(ODD_STATUS)
            return f"status of {s.dig(pod, 'metadata', 'name')} = {pod['status']!r}"
    return None


def _anywhere(draw: st.DrawFn, request: dict[str, Any], kind: str) -> str:
    """Any place in the request deleted, given a new odd key, or replaced by an odd value."""
    path = draw(st.sampled_from(_paths(request)))
    holder, key = _at(request, path[:-1]), path[-1]
    if kind == "delete":
        del holder[key]
        return f"delete {path}"
    target = _at(request, path)
    if kind == "add" and isinstance(target, dict):
        new_key = draw(ODD_TEXT)
        target[new_key] = draw(ODD)
        return f"add {path} + {new_key!r}"
    holder[key] = draw(ODD)
    return f"replace {path} = {holder[key]!r}"


@st.composite
def mutation(draw: st.DrawFn, request: dict[str, Any]) -> str:
    """Apply one random mutation to `request` in place; returns what it did."""
    kind = draw(st.sampled_from(KINDS))
    value = draw(HUGE | ODD)
    return (
        _at_a_field(draw, request, kind, value)
        or _of_the_job(draw, request, kind)
        or _anywhere(draw, request, kind)
    )


@st.composite
def mutated(
    draw: st.DrawFn, bases: tuple[str, ...] = tuple(BASES)
) -> tuple[dict[str, Any], list[str]]:
    request = copy.deepcopy(built(draw(st.sampled_from(bases))))
    done = [draw(mutation(request)) for _ in range(draw(st.integers(1, 4)))]
    return request, done
