"""The manifests the MXJob CRD refuses for a field's value: job modes and policies, the run
policy's numbers and queue, env names, container fields, labels and annotations."""

import pytest

from app.core.validate.sizerule import MAX_REPLICAS
from tests.support.crd_jobs import (
    BAD_KEYS,
    BAD_VALUES,
    KEYS,
    LABEL_VALUE_PATTERN,
    MX_CONFIG_TOO_LONG,
    MXNET,
    QUEUE_PATTERN,
    SPECS,
    UNCHECKED,
    case,
    containers,
    run_policy,
    worker,
)

INVALID_FIELDS = [
    pytest.param(
        *case(
            "dist-cpu.yaml",
            {"spec": {"jobMode": "MXServe"}},
            "spec.jobMode: 'MXServe' is not one of ['MXTrain', 'MXTune']",
            UNCHECKED,
        ),
        id="unknown-job-mode",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            worker({"restartPolicy": "Sometimes"}),
            f"{SPECS}.Worker.restartPolicy: 'Sometimes' is not one of "
            "['Always', 'OnFailure', 'Never', 'ExitCode']",
            UNCHECKED,
        ),
        id="unknown-restart-policy",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            run_policy(cleanPodPolicy="Finished"),
            "spec.runPolicy.cleanPodPolicy: 'Finished' is not one of ['All', 'Running', 'None']",
            UNCHECKED,
        ),
        id="unknown-clean-pod-policy",
    ),
    pytest.param(
        *case(
            "single-worker.yaml",
            {"spec": {"cleanPodPolicy": "Finished"}},
            "spec.cleanPodPolicy: 'Finished' is not one of ['All', 'Running', 'None']",
            UNCHECKED,
        ),
        id="legacy-unknown-clean-pod-policy",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            {"spec": {"cleanPodPolicy": "Finished"}},
            "spec.cleanPodPolicy: 'Finished' is not one of ['All', 'Running', 'None']",
            UNCHECKED,
            hook=False,
        ),
        id="legacy-unknown-clean-pod-policy-beside-run-policy",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            run_policy(ttlSecondsAfterFinished=-1),
            "spec.runPolicy.ttlSecondsAfterFinished: -1 is less than the minimum of 0",
        ),
        id="negative-ttl",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            run_policy(activeDeadlineSeconds=-5),
            "spec.runPolicy.activeDeadlineSeconds: -5 is less than the minimum of 0",
        ),
        id="negative-deadline",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            run_policy(backoffLimit=-1),
            "spec.runPolicy.backoffLimit: -1 is less than the minimum of 0",
        ),
        id="negative-backoff-limit",
    ),
    pytest.param(
        *case(
            "single-worker.yaml",
            {"spec": {"backoffLimit": -1}},
            "spec.backoffLimit: -1 is less than the minimum of 0",
        ),
        id="legacy-negative-backoff-limit",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            run_policy(schedulingPolicy={"minAvailable": -1}),
            "spec.runPolicy.schedulingPolicy.minAvailable: -1 is less than the minimum of 1",
        ),
        id="negative-min-available",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            run_policy(schedulingPolicy={"minAvailable": 0}),
            "spec.runPolicy.schedulingPolicy.minAvailable: 0 is less than the minimum of 1",
        ),
        id="min-available-0-refused-by-scheduler-plugins",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            run_policy(schedulingPolicy={"queue": "Team_A"}),
            f"spec.runPolicy.schedulingPolicy.queue: 'Team_A' does not match '{QUEUE_PATTERN}'",
        ),
        id="queue-not-a-dns-1123-subdomain",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            {"spec": {"mxReplicaSpecs": {"Worker": {"replicas": MAX_REPLICAS - 2}}}},
            f"{SPECS}: at most {MAX_REPLICAS} replicas in all",
            MX_CONFIG_TOO_LONG,
        ),
        id="one-replica-over-the-hooks-cap",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            worker(containers(MXNET | {"env": [{"value": "1"}]})),
            f"{SPECS}.Worker.template.spec.containers[0].env[0]: 'name' is a required property",
            UNCHECKED,
        ),
        id="env-entry-without-a-name",
    ),
    *(
        pytest.param(
            *case(
                "dist-cpu.yaml",
                worker(containers(MXNET | {"env": [{"name": name, "value": "1"}]})),
                # The env-name rule again in the hook's table (tests/unit/core/test_validation.py): the same
                # names, the CRD's own message; each tier keeps its own table.
                f"{SPECS}.Worker.template.spec.containers[0].env[0].name: '{name}' does not "
                "match '^[ -<>-~]+$'",
            ),
            id=f"env-name-{what}",
        )
        for what, name in {"empty": "", "with-equals": "A=B", "non-ascii": "É"}.items()
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            worker(
                {
                    "template": {
                        "spec": {
                            "initContainers": [
                                {"name": "init", "image": "busybox", "env": [{"name": "A=B"}]}
                            ]
                        }
                    }
                }
            ),
            f"{SPECS}.Worker.template.spec.initContainers[0].env[0].name: 'A=B' does not "
            "match '^[ -<>-~]+$'",
        ),
        id="init-container-env-name-with-equals",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            worker(containers(MXNET | {"imagee": "mxjob/mxnet:1.9.2"})),
            f"{SPECS}.Worker.template.spec.containers[0]: Additional properties are not allowed "
            "('imagee' was unexpected)",
            UNCHECKED,
            hook=False,
        ),
        id="unknown-container-field",
    ),
    *(
        pytest.param(
            *case(
                "dist-cpu.yaml",
                worker({"template": {"metadata": {"labels": {key: "a"}}}}),
                f"{SPECS}.Worker.template.metadata.labels: {KEYS}",
            ),
            id=f"label-key-{name}",
        )
        for name, key in BAD_KEYS.items()
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            worker({"template": {"metadata": {"annotations": {"bad key": "a"}}}}),
            f"{SPECS}.Worker.template.metadata.annotations: {KEYS}",
        ),
        id="annotation-key-with-a-space",
    ),
    *(
        pytest.param(
            *case(
                "dist-cpu.yaml",
                worker({"template": {"metadata": {"labels": {"team": value}}}}),
                f"{SPECS}.Worker.template.metadata.labels.team: '{value}' does not match "
                f"'{LABEL_VALUE_PATTERN}'",
            ),
            id=f"label-value-{name}",
        )
        for name, value in BAD_VALUES.items()
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            worker({"template": {"metadata": {"labels": {"team": "a" * 64}}}}),
            f"{SPECS}.Worker.template.metadata.labels.team: '{'a' * 64}' is too long",
            UNCHECKED,
        ),
        id="label-value-64-characters",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            run_policy(schedulingPolicy={"scheduleTimeoutSeconds": -1}),
            "spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds: -1 is less than the "
            "minimum of 0",
        ),
        id="negative-schedule-timeout",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            run_policy(schedulingPolicy={"minResources": {"cpu": "-1", "memory": -5}}),
            "spec.runPolicy.schedulingPolicy.minResources.cpu: '-1' does not match "
            "'^\\\\+?(([0-9]+(\\\\.[0-9]*)?)|(\\\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\\\+|-)?"
            "(([0-9]+(\\\\.[0-9]*)?)|(\\\\.[0-9]+))))?$'",
            "spec.runPolicy.schedulingPolicy.minResources.memory: -5 is less than the minimum of 0",
            hook=False,
        ),
        id="negative-min-resources",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            run_policy(suspend="yes"),
            "spec.runPolicy.suspend: 'yes' is not of type 'boolean'",
            UNCHECKED,
        ),
        id="suspend-not-a-boolean",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            {"spec": {"replicaSpecs": []}},
            "spec: Additional properties are not allowed ('replicaSpecs' was unexpected)",
            UNCHECKED,
            hook=False,
        ),
        id="unknown-spec-field",
    ),
]
