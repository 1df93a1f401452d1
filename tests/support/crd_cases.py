"""The MXJob CRD's case tables: the manifests it admits and those it refuses, with the
messages of docs/behaviour.md#validation; the manifests tier and the API-server tier both use
them."""

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.core.validate.sizerule import MAX_REPLICAS
from tests.support import FIXTURES, REPO
from tests.support.crd_admission import NOT_CHECKED

EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
LEGACY = sorted((FIXTURES / "legacy").glob("*.yaml"))
UNCHECKED = f": {NOT_CHECKED}"
SPECS = "spec.mxReplicaSpecs"
TRAIN_ONLY = f"{SPECS}: jobMode MXTrain accepts only the replica types Scheduler, Server and Worker"
TUNE_ONLY = (
    f"{SPECS}: jobMode MXTune accepts only the replica types TunerTracker, TunerServer and Tuner"
)
NEEDS_SCHEDULER = (
    f"{SPECS}: jobMode MXTrain needs a Scheduler (1 replica) when it has a Server or more than "
    "one Worker"
)
NEEDS_CONTAINER = "the template needs at least one container (template.spec.containers)"
NOT_DNS_1035 = (
    "metadata.name: must be a DNS-1035 label: lower-case letters, digits and '-', starting "
    "with a letter and ending with a letter or digit"
)
CHILD_NAME_TOO_LONG = (
    "metadata.name: too long: every child name <name>-<replica type>-<index> must fit in 63 "
    "characters (a Service name)"
)
SYNC_TOO_LARGE = (
    "spec.mxReplicaSpecs: the size rule: once every pod runs, a sync request of this job would "
    "carry more than 48 MiB, even before its pod templates are counted; use fewer replicas, "
    "fewer containers or a shorter job name"
)
MX_CONFIG_TOO_LONG = (
    "spec.mxReplicaSpecs: the size rule: MX_CONFIG, which lists every replica of the job, "
    "would not fit in the 131,061 bytes a process's environment variable may hold; use fewer "
    "replicas or a shorter job name"
)


def load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return doc


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: `None` deletes, dicts merge, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def job(base: str, patch: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = merge(load(REPO / "examples" / base), patch)
    return result


def containers(*items: dict[str, Any]) -> dict[str, Any]:
    return {"template": {"spec": {"containers": list(items)}}}


def worker(patch: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"mxReplicaSpecs": {"Worker": patch}}}


def run_policy(**fields: Any) -> dict[str, Any]:
    return {"spec": {"runPolicy": fields}}


MXNET = {"name": "mxnet", "image": "mxjob/mxnet:1.9.1"}
QUEUE_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
LABEL_VALUE_PATTERN = "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
KEYS = (
    "keys must be qualified names: an optional DNS subdomain prefix and '/', then at most 63 "
    "letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
)
BAD_KEYS = {
    "with-a-space": "bad key",
    "64-characters": "k" * 64,
    "leading-dash": "-team",
    "upper-case-prefix": "Example.com/team",
    "empty-name-after-prefix": "example.com/",
    # Its name and pattern are right; a DNS subdomain has at most 253 characters.
    "255-character-prefix": ".".join(["a" * 63] * 4) + "/team",
}
SUBDOMAIN_253 = ".".join(["a" * 63] * 3 + ["a" * 61])
BAD_VALUES = {"with-a-space": "a b", "leading-dash": "-a", "trailing-dot": "a."}

VALID = [
    *(pytest.param(load(p), id=f"example-{p.stem}") for p in EXAMPLES),
    *(pytest.param(load(p), id=f"legacy-{p.stem}") for p in LEGACY),
    pytest.param(
        job("dist-cpu.yaml", {"metadata": {"name": "a" * 51}}),
        id="name-whose-longest-child-name-is-63-characters",
    ),
    pytest.param(
        job(
            "tune.yaml",
            {
                "metadata": {"name": "t" * 48},
                "spec": {"mxReplicaSpecs": {"TunerServer": {"replicas": 100}}},
            },
        ),
        id="name-fits-with-two-digit-index",
    ),
    pytest.param(
        job(
            "single-worker.yaml",
            {"spec": {"mxReplicaSpecs": {"Scheduler": {"replicas": 0, **containers(MXNET)}}}},
        ),
        id="scheduler-without-replicas-and-one-worker",
    ),
    pytest.param(
        job(
            "dist-cpu.yaml",
            {"spec": {"cleanPodPolicy": "None", "runPolicy": {"cleanPodPolicy": "All"}}},
        ),
        id="run-policy-in-both-placements",
    ),
    pytest.param(
        job(
            "dist-gpu.yaml",
            run_policy(
                schedulingPolicy={
                    "minAvailable": 4,
                    "queue": "training",
                    "priorityClass": "high",
                    "scheduleTimeoutSeconds": 600,
                    "minResources": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 2},
                }
            ),
        ),
        id="full-scheduling-policy",
    ),
    pytest.param(
        job("dist-cpu.yaml", worker(containers({"name": "sidecar", "image": "busybox"}, MXNET))),
        id="mxnet-container-not-first",
    ),
    pytest.param(
        job(
            "dist-cpu.yaml",
            {
                "metadata": {"name": "a"},
                "spec": {
                    "mxReplicaSpecs": {
                        # The most the size rule admits (its parse cost binds, 3,195
                        # replicas in all); a one-digit mxjob-port keeps MX_CONFIG short, and
                        # the Workers go without the example's securityContext.
                        "Worker": {
                            "replicas": 3192,
                            "template": {
                                "spec": {
                                    "securityContext": None,
                                    "containers": [
                                        MXNET
                                        | {"ports": [{"name": "mxjob-port", "containerPort": 1}]}
                                    ],
                                }
                            },
                        }
                    }
                },
            },
        ),
        id="as-many-replicas-as-the-hook-allows",
    ),
    pytest.param(
        job(
            "dist-cpu.yaml",
            worker(
                {
                    "template": {
                        "metadata": {
                            "labels": {"example.com/team": "a-b_c.d", "empty": "", "k" * 63: "v"},
                            "annotations": {"example.com/note": "any text at all: é, spaces"},
                        }
                    }
                }
            ),
        ),
        id="labels-and-annotations-kubernetes-accepts",
    ),
    pytest.param(
        job(
            "dist-cpu.yaml",
            worker({"template": {"metadata": {"labels": {SUBDOMAIN_253 + "/team": "a"}}}}),
        ),
        id="label-key-with-a-253-character-prefix",
    ),
    pytest.param(
        job("dist-cpu.yaml", run_policy(schedulingPolicy={"minAvailable": 1, "queue": "a.b-c"})),
        id="min-available-1-and-a-dotted-queue",
    ),
    pytest.param(
        job("dist-cpu.yaml", worker(containers(MXNET | {"env": [{"name": "my-var.1 x"}]}))),
        id="env-name-kubernetes-accepts-since-1-32",
    ),
]


def case(base: str, patch: dict[str, Any], *errors: str, hook: bool = True) -> Any:
    """An invalid job: `base` example with a merge `patch`, and every error admission reports.
    `hook=False` marks a case only the CRD rejects: the hook ignores the field, or (legacy
    placement) lets spec.runPolicy override the invalid value before checking it."""
    return (job(base, patch), list(errors), hook)


INVALID = [
    pytest.param(
        *case(
            "dist-cpu.yaml",
            {"metadata": {"name": "a"}}
            | worker(
                {"replicas": 3200}
                | containers(MXNET, *({"name": f"side-{i}", "image": "busybox"} for i in range(3)))
            ),
            SYNC_TOO_LARGE,
        ),
        id="sync-too-large-whatever-the-templates",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            {"spec": {"mxReplicaSpecs": {"Worker": {"replicas": 3000}}}},
            MX_CONFIG_TOO_LONG,
        ),
        id="mx-config-too-long-for-a-process",
    ),
    pytest.param(
        *case("dist-cpu.yaml", {"metadata": {"name": "Mnist_dist"}}, NOT_DNS_1035),
        id="name-not-dns-1035",
    ),
    pytest.param(
        *case("dist-cpu.yaml", {"metadata": {"name": "1mnist"}}, NOT_DNS_1035),
        id="name-starts-with-digit",
    ),
    pytest.param(
        *case("dist-cpu.yaml", {"metadata": {"name": "mnist-"}}, NOT_DNS_1035),
        id="name-ends-with-dash",
    ),
    pytest.param(
        *case("dist-cpu.yaml", {"metadata": {"name": "a" * 52}}, CHILD_NAME_TOO_LONG),
        id="scheduler-child-name-64-characters",
    ),
    pytest.param(
        *case(
            "tune.yaml",
            {
                "metadata": {"name": "t" * 48},
                "spec": {"mxReplicaSpecs": {"TunerServer": {"replicas": 101}}},
            },
            CHILD_NAME_TOO_LONG,
        ),
        id="three-digit-index-makes-child-name-too-long",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            {"metadata": {"name": "a" * 64}},
            f"metadata.name: '{'a' * 64}' is too long",
            UNCHECKED,
        ),
        id="name-longer-than-63",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            {"spec": {"mxReplicaSpecs": None}},
            f"{SPECS}: mxReplicaSpecs needs at least one replica spec",
        ),
        id="replica-specs-missing",
    ),
    pytest.param(
        *case(
            "single-worker.yaml",
            {"spec": {"mxReplicaSpecs": {"Worker": None}}},
            f"{SPECS}: mxReplicaSpecs needs at least one replica spec",
        ),
        id="replica-specs-empty",
    ),
    pytest.param(
        *case("dist-cpu.yaml", worker({"template": None}), f"{SPECS}.Worker: {NEEDS_CONTAINER}"),
        id="template-missing",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            worker({"template": {"spec": None}}),
            f"{SPECS}.Worker: {NEEDS_CONTAINER}",
        ),
        id="template-without-pod-spec",
    ),
    pytest.param(
        *case("dist-cpu.yaml", worker(containers()), f"{SPECS}.Worker: {NEEDS_CONTAINER}"),
        id="no-containers",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            worker(containers({"name": "mxnet"})),
            f"{SPECS}.Worker.template.spec.containers[0]: 'image' is a required property",
            UNCHECKED,
        ),
        id="image-missing",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            worker(containers(MXNET, {"name": "sidecar", "image": ""})),
            f"{SPECS}.Worker.template.spec.containers[1].image: '' should be non-empty",
        ),
        id="sidecar-image-empty",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            worker(containers({"name": "main", "image": "mxjob/mxnet:1.9.1"})),
            f"{SPECS}.Worker: one container of the template must be named mxnet",
        ),
        id="no-container-named-mxnet",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            {"spec": {"mxReplicaSpecs": {"Server": {"replicas": -1}}}},
            f"{SPECS}.Server.replicas: -1 is less than the minimum of 0",
        ),
        id="replicas-negative",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            {"spec": {"mxReplicaSpecs": {"Server": {"replicas": "2"}}}},
            f"{SPECS}.Server.replicas: '2' is not of type 'integer'",
            UNCHECKED,
        ),
        id="replicas-not-an-integer",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            {"spec": {"mxReplicaSpecs": {"Scheduler": {"replicas": 2}}}},
            f"{SPECS}: Scheduler can have at most 1 replica",
        ),
        id="two-schedulers",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            {
                "spec": {
                    "mxReplicaSpecs": {
                        "Scheduler": None,
                        "scheduler": {"replicas": 2, **containers(MXNET)},
                    }
                }
            },
            f"{SPECS}: Scheduler can have at most 1 replica",
        ),
        id="two-schedulers-under-a-lower-case-key",
    ),
    pytest.param(
        *case("dist-cpu.yaml", {"spec": {"mxReplicaSpecs": {"Scheduler": None}}}, NEEDS_SCHEDULER),
        id="server-without-scheduler",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            {"spec": {"mxReplicaSpecs": {"Scheduler": None, "Server": None}}},
            NEEDS_SCHEDULER,
        ),
        id="two-workers-without-scheduler",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            {"spec": {"mxReplicaSpecs": {"Scheduler": {"replicas": 0}}}},
            NEEDS_SCHEDULER,
        ),
        id="scheduler-with-no-replicas-and-servers",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            {"spec": {"mxReplicaSpecs": {"TunerServer": containers(MXNET)}}},
            TRAIN_ONLY,
        ),
        id="train-job-with-a-tune-type",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml", {"spec": {"mxReplicaSpecs": {"Chief": containers(MXNET)}}}, TRAIN_ONLY
        ),
        id="unknown-replica-type",
    ),
    pytest.param(
        *case(
            "dist-cpu.yaml",
            {"spec": {"mxReplicaSpecs": {"worker": containers(MXNET)}}},
            f"{SPECS}: each replica type may appear once in mxReplicaSpecs; letter case is "
            "ignored, so Worker and worker are the same type",
        ),
        id="same-type-in-two-letter-cases",
    ),
    pytest.param(
        *case("tune.yaml", {"spec": {"mxReplicaSpecs": {"Worker": containers(MXNET)}}}, TUNE_ONLY),
        id="tune-job-with-a-train-type",
    ),
    pytest.param(
        *case(
            "tune.yaml",
            {"spec": {"mxReplicaSpecs": {"TunerTracker": None}}},
            f"{SPECS}: jobMode MXTune needs exactly one TunerTracker (1 replica)",
        ),
        id="tune-job-without-tracker",
    ),
    pytest.param(
        *case(
            "tune.yaml",
            {"spec": {"mxReplicaSpecs": {"Tuner": {"replicas": 2}}}},
            f"{SPECS}: jobMode MXTune needs exactly one Tuner (1 replica)",
        ),
        # Same shape, different facts: one case a pytest.param, kept apart for readable failures.
        id="tune-job-with-two-tuners",
    ),
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
