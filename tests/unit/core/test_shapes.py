"""Every MXJob shape: which replica decides, and legacy manifests accepted unchanged."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from app.core.decide.decision import deciders
from app.core.validate.validation import validated_spec
from tests.support import FIXTURES, REPO
from tests.support import jobs as s
from tests.support.hooked import sync

LEGACY = sorted((FIXTURES / "legacy").glob("*.yaml"))
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))

TRAIN = s.train_spec(servers=1, workers=2)
SINGLE = {"mxReplicaSpecs": {"Worker": s.replica()}}
NO_SERVER = {"mxReplicaSpecs": {"Scheduler": s.replica(), "Worker": s.replica(2)}}
TUNE = {
    "jobMode": "MXTune",
    "mxReplicaSpecs": {
        "TunerTracker": s.replica(),
        "TunerServer": s.replica(2),
        "Tuner": s.replica(),
    },
}
R, OK, FAIL = (
    s.pod_status("Running"),
    s.pod_status("Succeeded", exit_code=0),
    s.pod_status("Failed", exit_code=1),
)


def true_conditions(
    spec: dict[str, Any], states: dict[str, dict[str, Any]], default: dict[str, Any]
) -> list[str]:
    """Sync once to get the pods, observe them in the given states (by replica type), sync again."""
    parent = s.mxjob(spec)
    first = s.created(s.request(parent))
    pods = [
        s.observed(
            p, **states.get(p["metadata"]["labels"]["training.kubeflow.org/replica-type"], default)
        )
        for p in s.pods_of(first)
    ]
    answer = sync(s.request(parent | {"status": first["status"]}, pods), s.NOW)
    return [c["type"] for c in answer["status"]["conditions"] if c["status"] == "True"]


PENDING = s.pod_status("Pending")
# A spec, the pods' states by replica type (the others in the default state), and the
# conditions then true: which replica decides.
DECIDER_CASES = [
    pytest.param(TRAIN, {"scheduler": R}, PENDING, ["Created", "Running"],
                 id="train-scheduler-running-decides"),
    pytest.param(TRAIN, {"scheduler": PENDING}, R, ["Created"],
                 id="train-workers-running-not-enough"),
    pytest.param(TRAIN, {"scheduler": OK}, R, ["Created", "Succeeded"],
                 id="train-scheduler-succeeded-decides"),
    pytest.param(TRAIN, {"worker": OK}, R, ["Created", "Running"],
                 id="train-workers-succeeded-not-enough"),
    pytest.param(TRAIN, {"server": FAIL}, R, ["Created", "Failed"],
                 id="train-any-never-failure-fails"),
    pytest.param(NO_SERVER, {"scheduler": OK}, R, ["Created", "Succeeded"],
                 id="no-server-scheduler-decides"),
    pytest.param(SINGLE, {}, R, ["Created", "Running"], id="single-worker-running"),
    pytest.param(SINGLE, {}, OK, ["Created", "Succeeded"], id="single-worker-succeeded"),
    pytest.param(SINGLE, {}, FAIL, ["Created", "Failed"], id="single-worker-failed"),
    pytest.param(TUNE, {"tuner": R}, PENDING, ["Created", "Running"],
                 id="tune-tuner-running-decides"),
    pytest.param(TUNE, {"tuner": OK}, R, ["Created", "Succeeded"],
                 id="tune-tuner-succeeded-decides"),
    pytest.param(TUNE, {"tunertracker": OK, "tunerserver": OK}, R, ["Created", "Running"],
                 id="tune-others-succeeded-not-enough"),
    pytest.param(TUNE, {"tunerserver": FAIL}, R, ["Created", "Failed"],
                 id="tune-server-failure-fails"),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "states", "default", "expected"), DECIDER_CASES)
def test_decider(
    spec: dict[str, Any], states: dict[str, Any], default: dict[str, Any], expected: list[str]
) -> None:
    assert true_conditions(spec, states, default) == expected


@pytest.mark.parametrize(
    ("spec", "decider"),
    [
        pytest.param(TRAIN, ["Scheduler"], id="train"),
        pytest.param(SINGLE, ["Worker"], id="single-worker"),
        pytest.param(TUNE, ["Tuner"], id="tune"),
    ],
)
def test_deciders(spec: dict[str, Any], decider: list[str]) -> None:
    assert [t.value for t in deciders(validated_spec("job", spec))] == decider


def _jobs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@pytest.mark.parametrize("path", LEGACY + EXAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_manifest_is_accepted_unchanged(path: Path) -> None:
    for job in _jobs(path):
        answer = s.created(s.request(job))
        reasons = [c["reason"] for c in answer["status"]["conditions"]]
        assert reasons == ["MXJobCreated"], answer["status"]
        spec = validated_spec(job["metadata"]["name"], job["spec"])
        expected = sum(r.replicas for r in spec.mxReplicaSpecs.values())
        assert len(s.pods_of(answer)) == expected


def test_legacy_fixtures_cover_every_legacy_shape() -> None:
    raw = [job["spec"] for path in LEGACY for job in _jobs(path)]
    keys = {k for spec in raw for k in spec["mxReplicaSpecs"]}
    assert {"scheduler", "server", "worker"} <= keys, "lower-case keys"
    assert any(k.isupper() for k in keys), "upper-case keys"
    assert any(
        k.lower() in ("tunertracker", "tunerserver", "tuner")
        and k not in ("TunerTracker", "TunerServer", "Tuner")
        for k in keys
    )
    assert any(
        set(spec)
        & {"cleanPodPolicy", "backoffLimit", "ttlSecondsAfterFinished", "activeDeadlineSeconds"}
        for spec in raw
    )
    assert any("label" in r for spec in raw for r in spec["mxReplicaSpecs"].values())
