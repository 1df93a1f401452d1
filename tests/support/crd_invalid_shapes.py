"""The manifests the MXJob CRD refuses for their shape: the job's name, its replica specs, their
templates and containers, the replica types each job mode takes, and the size rule."""

import pytest

from tests.support.crd_jobs import (
    CHILD_NAME_TOO_LONG,
    MX_CONFIG_TOO_LONG,
    MXNET,
    NEEDS_CONTAINER,
    NEEDS_SCHEDULER,
    NOT_DNS_1035,
    SPECS,
    SYNC_TOO_LARGE,
    TRAIN_ONLY,
    TUNE_ONLY,
    UNCHECKED,
    case,
    containers,
    worker,
)

INVALID_SHAPES = [
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
]
