"""Reading observed children: counts are ASCII digits only, and an attempt is what the pod's
immutable name says, whatever its labels were edited to."""

import copy
from typing import Any

import pytest

from app.core.model.spec import ReplicaType
from app.core.mxnet import names
from app.core.observe.pods import attempt_of, count, observe
from tests.support import jobs as s
from tests.support.hooked import sync
from tests.support.odd_digits import NOT_DIGITS, UNICODE_DIGITS

RUNNING = s.pod_status("Running")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("0", 0, id="zero"),
        pytest.param("12", 12, id="decimal-string"),
        pytest.param(7, 7, id="integer"),
        *(
            pytest.param(text, None, id=name)
            for name, text in (UNICODE_DIGITS | NOT_DIGITS).items()
        ),
        pytest.param(-1, None, id="negative-integer"),
        pytest.param(True, None, id="boolean"),
        pytest.param(1.0, None, id="float"),
        pytest.param("1234567890", None, id="ten-digits"),
    ],
)
def test_count(value: Any, expected: int | None) -> None:
    assert count(value) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("mnist-worker-1", 0, id="first-attempt"),
        pytest.param("mnist-worker-1-r3", 3, id="third-replacement"),
        pytest.param("mnist-worker-1-r03", None, id="leading-zero"),
        pytest.param("mnist-worker-1-r0", None, id="r0-is-not-a-name-the-hook-gives"),
        pytest.param("mnist-worker-1-r", None, id="no-number"),
        pytest.param("mnist-worker-1-r²", None, id="unicode-digit"),
        pytest.param("mnist-worker-10", None, id="another-index"),
        pytest.param("mnist-worker-1-x", None, id="foreign-suffix"),
        pytest.param("other-worker-1", None, id="another-job"),
    ],
)
def test_attempt_of_a_pod_name(name: str, expected: int | None) -> None:
    assert attempt_of(name, "mnist", ReplicaType.WORKER, 1) == expected


def _running_job() -> tuple[dict[str, Any], dict[str, Any]]:
    parent = s.mxjob(s.train_spec(1, 2, "ExitCode"))
    first = s.created(s.request(parent))
    phases = {p["metadata"]["name"]: RUNNING for p in s.pods_of(first)}
    return s.step(parent, first, phases)


def _pod(request: dict[str, Any], name: str) -> dict[str, Any]:
    pod: dict[str, Any] = request["children"]["Pod.v1"][f"default/{name}"]
    return pod


def _with(request: dict[str, Any], name: str, where: str, key: str, value: str) -> dict[str, Any]:
    out = copy.deepcopy(request)
    _pod(out, name)["metadata"].setdefault(where, {})[key] = value
    return out


@pytest.mark.parametrize(
    ("where", "key", "value"),
    [
        pytest.param("labels", names.LABEL_ATTEMPT, "3", id="attempt-label-0-to-3"),
        pytest.param("labels", names.LABEL_ATTEMPT, "²", id="attempt-label-superscript"),
        pytest.param("labels", names.LABEL_ATTEMPT, "①", id="attempt-label-circled"),
        pytest.param("annotations", names.ANNOTATION_RESTARTS, "²", id="restarts-superscript"),
        pytest.param("annotations", names.ANNOTATION_RESTARTS, "①", id="restarts-circled"),
    ],
)
def test_an_edited_label_on_a_running_pod_changes_nothing(where: str, key: str, value: str) -> None:
    request, answer = _running_job()
    edited = _with(request, "mnist-worker-1", where, key, value)

    again = sync(edited, s.NOW)

    # Same pods asked for (no `-r3`, nothing dropped), same status: the edit is ignored.
    assert s.names(s.pods_of(again)) == s.names(s.pods_of(answer))
    assert again["status"] == sync(request, s.NOW)["status"]


@pytest.mark.parametrize("value", ["²", "①", "٣", "1²"])
def test_a_services_unicode_digits_are_ignored(value: str) -> None:
    request, _ = _running_job()
    for service in request["children"]["Service.v1"].values():
        service["metadata"]["annotations"] = {
            names.LABEL_ATTEMPT: value,
            names.ANNOTATION_RESTARTS: value,
        }

    answer = sync(request, s.NOW)

    # Read as attempt 0 with no restarts: the Services are asked for without the annotations.
    assert [sv["metadata"].get("annotations", {}) for sv in s.services_of(answer)] == [{}] * 4


def test_a_pod_whose_name_disagrees_with_its_labels_is_not_an_attempt() -> None:
    request, answer = _running_job()
    impostor = copy.deepcopy(_pod(request, "mnist-worker-1"))
    impostor["metadata"]["name"] = "mnist-worker-1-copy"
    impostor["status"] = s.pod_status("Failed", exit_code=1)
    request["children"]["Pod.v1"]["default/mnist-worker-1-copy"] = impostor

    again = sync(request, s.NOW)

    assert s.names(s.pods_of(again)) == s.names(s.pods_of(answer))
    assert [c["type"] for c in again["status"]["conditions"] if c["status"] == "True"] == [
        "Created",
        "Running",
    ]


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("mxnet", id="the-main-container"),
        pytest.param("sidecar", id="another-container"),
        pytest.param(["mxnet"], id="a-list"),
        pytest.param({"name": "mxnet"}, id="an-object"),
        pytest.param(None, id="null"),
    ],
)
def test_a_container_status_of_any_name_gives_its_exit_code(name: Any) -> None:
    """A container status's name is read as any JSON value (a list once made the sync a 500,
    found by tests/http/test_fuzz.py); only the string `mxnet` is the main container."""
    request, _ = _running_job()
    pod = copy.deepcopy(_pod(request, "mnist-worker-1"))
    pod["status"] = s.pod_status("Failed", exit_code=137)
    pod["status"]["containerStatuses"][0]["name"] = name

    (attempt,) = observe([pod], "mnist")

    assert attempt.exit_code == 137
