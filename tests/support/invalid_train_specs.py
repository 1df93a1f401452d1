"""The train specs validation refuses, each a job name, an edit of a valid train spec and the
start of the problem it reports (docs/behaviour.md#validation)."""

import pytest

from tests.support.jobs import replica
from tests.support.spec_edits import WT, W, dropping, setting

INVALID_TRAIN = [
    pytest.param(
        "MNIST", None, "metadata.name: 'MNIST' must be a DNS-1035 label", id="upper-case-name"
    ),
    pytest.param("1job", None, "metadata.name: '1job' must be a DNS-1035 label", id="digit-first"),
    pytest.param(
        "a" * 55,
        None,
        "metadata.name: too long: child name 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-scheduler-0' has 67 characters",
        id="too-long",
    ),
    pytest.param(
        "mnist",
        setting("mxReplicaSpecs", {}),
        "spec.mxReplicaSpecs: needs at least one replica spec",
        id="no-replicas",
    ),
    pytest.param(
        "mnist",
        dropping("mxReplicaSpecs"),
        "spec.mxReplicaSpecs: Field required",
        id="no-mxReplicaSpecs",
    ),
    pytest.param(
        "mnist",
        dropping(f"{W}.template"),
        "spec.mxReplicaSpecs.Worker.template: Field required",
        id="no-template",
    ),
    pytest.param(
        "mnist",
        setting(f"{W}.template.spec.containers", []),
        f"{WT}.spec.containers: needs at least one container",
        id="no-containers",
    ),
    pytest.param(
        "mnist",
        setting(f"{W}.template.spec.containers", [{"name": "mxnet"}]),
        f"{WT}.spec.containers[0].image: must be a non-empty string",
        id="no-image",
    ),
    pytest.param(
        "mnist",
        setting(f"{W}.template.spec.containers", [{"name": "main", "image": "x"}]),
        f"{WT}.spec.containers: one container must be named 'mxnet'",
        id="no-mxnet-container",
    ),
    pytest.param(
        "mnist",
        setting(f"{W}.replicas", -1),
        "spec.mxReplicaSpecs.Worker.replicas: Input should be greater than or equal to 0",
        id="negative-replicas",
    ),
    pytest.param(
        "mnist",
        setting(f"{W}.replicas", "2"),
        "spec.mxReplicaSpecs.Worker.replicas: Input should be a valid integer",
        id="string-replicas",
    ),
    pytest.param(
        "mnist",
        setting("mxReplicaSpecs.Scheduler.replicas", 2),
        "spec.mxReplicaSpecs.Scheduler.replicas: must be at most 1",
        id="two-schedulers",
    ),
    pytest.param(
        "mnist",
        dropping("mxReplicaSpecs.Scheduler"),
        "spec.mxReplicaSpecs.Scheduler: required (1 replica) when the job has a Server or more than one Worker",
        id="server-without-scheduler",
    ),
    pytest.param(
        "mnist",
        setting("mxReplicaSpecs.Tuner", replica()),
        "spec.mxReplicaSpecs: jobMode MXTrain allows only Scheduler, Server, Worker, got ['Tuner']",
        id="train-with-tuner",
    ),
    pytest.param(
        "mnist",
        setting("jobMode", "MXServe"),
        "spec.jobMode: Input should be 'MXTrain' or 'MXTune'",
        id="unknown-job-mode",
    ),
    pytest.param(
        "mnist",
        setting(f"{W}.restartPolicy", "Sometimes"),
        # Same shape, different facts: one case a pytest.param, kept apart for readable failures.
        "spec.mxReplicaSpecs.Worker.restartPolicy: Input should be 'Always', 'OnFailure', 'Never' or 'ExitCode'",
        id="unknown-restart-policy",
    ),
    pytest.param(
        "mnist",
        setting("runPolicy", {"backoffLimit": -1}),
        "spec.runPolicy.backoffLimit: Input should be greater than or equal to 0",
        id="negative-backoff",
    ),
    pytest.param(
        "mnist",
        setting("runPolicy", {"activeDeadlineSeconds": -5}),
        "spec.runPolicy.activeDeadlineSeconds: Input should be greater than or equal to 0",
        id="negative-deadline",
    ),
    pytest.param(
        "mnist",
        setting("runPolicy", {"ttlSecondsAfterFinished": -5}),
        "spec.runPolicy.ttlSecondsAfterFinished: Input should be greater than or equal to 0",
        id="negative-ttl",
    ),
    pytest.param(
        "mnist",
        setting("runPolicy", {"cleanPodPolicy": "Some"}),
        "spec.runPolicy.cleanPodPolicy: Input should be 'All', 'Running' or 'None'",
        id="unknown-clean-pod-policy",
    ),
    pytest.param(
        "mnist",
        setting("runPolicy", {"schedulingPolicy": {"minAvailable": -1}}),
        "spec.runPolicy.schedulingPolicy.minAvailable: Input should be greater than or equal to 1",
        id="negative-min-available",
    ),
    pytest.param(
        "mnist",
        setting("runPolicy", {"schedulingPolicy": {"minAvailable": 0}}),
        "spec.runPolicy.schedulingPolicy.minAvailable: Input should be greater than or equal to 1",
        id="min-available-0-refused-by-scheduler-plugins",
    ),
    pytest.param(
        "mnist",
        setting("runPolicy", {"schedulingPolicy": {"queue": "Team_A"}}),
        "spec.runPolicy.schedulingPolicy.queue: 'Team_A' must name a Volcano Queue, so be a "
        "DNS-1123 subdomain",
        id="queue-not-a-dns-1123-subdomain",
    ),
    # The legacy placement under `spec`: named where the user wrote it.
    pytest.param(
        "mnist",
        setting("schedulingPolicy", {"queue": "Team_A"}),
        "spec.schedulingPolicy.queue: 'Team_A' must name a Volcano Queue",
        id="queue-in-the-legacy-placement",
    ),
    pytest.param(
        "mnist",
        setting("schedulingPolicy", {"minAvailable": 0}),
        "spec.schedulingPolicy.minAvailable: Input should be greater than or equal to 1",
        id="min-available-in-the-legacy-placement",
    ),
    pytest.param(
        "mnist",
        setting("backoffLimit", -1),
        "spec.backoffLimit: Input should be greater than or equal to 0",
        id="backoff-limit-in-the-legacy-placement",
    ),
    pytest.param(
        "mnist",
        setting(f"{W}.template.metadata", {"labels": {"bad key": "a"}}),
        f"{WT}.metadata.labels: key 'bad key' must be a qualified name",
        id="label-key-with-a-space",
    ),
    pytest.param(
        "mnist",
        setting(f"{W}.template.metadata", {"labels": {"k" * 64: "a"}}),
        f"{WT}.metadata.labels: key '{'k' * 64}' must be a qualified name",
        id="label-key-64-characters",
    ),
    pytest.param(
        "mnist",
        setting(f"{W}.template.metadata", {"labels": {"-team": "a"}}),
        f"{WT}.metadata.labels: key '-team' must be a qualified name",
        id="label-key-leading-dash",
    ),
    pytest.param(
        "mnist",
        setting(f"{W}.template.metadata", {"annotations": {"example.com/": "a"}}),
        f"{WT}.metadata.annotations: key 'example.com/' must be a qualified name",
        id="annotation-key-without-a-name",
    ),
    *(
        pytest.param(
            "mnist",
            setting(f"{W}.template.metadata", {"labels": {"team": value}}),
            f"{WT}.metadata.labels.team: value {value!r} must be empty or at most 63",
            id=f"label-value-{case}",
        )
        for case, value in {
            "space": "a b",
            "64-characters": "v" * 64,
            "leading-dash": "-a",
        }.items()
    ),
    pytest.param(
        "mnist",
        setting(f"{W}.template.metadata", {"labels": {"a": 1}}),
        f"{WT}.metadata.labels: must map strings to strings",
        id="label-not-string",
    ),
    pytest.param(
        "mnist",
        setting(
            f"{W}.template.spec.containers",
            [{"name": "mxnet", "image": "x", "env": [{"value": "1"}]}],
        ),
        f"{WT}.spec.containers[0].env[0].name: required: every env entry needs a name",
        id="env-without-name",
    ),
    *(
        pytest.param(
            "mnist",
            setting(
                f"{W}.template.spec.containers",
                [{"name": "mxnet", "image": "x", "env": [{"name": "OK"}, {"name": name}]}],
            ),
            f"{WT}.spec.containers[0].env[1].name: {name!r} must be printable ASCII without '='",
            id=f"env-name-{case}",
        )
        for case, name in {"empty": "", "with-equals": "A=B", "non-ascii": "É"}.items()
    ),
    pytest.param(
        "mnist",
        setting(
            f"{W}.template.spec.containers",
            [{"name": "mxnet", "image": "x", "ports": [{"containerPort": 0}]}],
        ),
        f"{WT}.spec.containers[0].ports[0].containerPort: must be 1-65535",
        id="bad-port",
    ),
]
