"""The MXJob CRD's case tables: the manifests it admits and those it refuses, with the
messages of docs/behaviour.md#validation; the manifests tier and the API-server tier both use
them."""

import pytest

from tests.support.crd_invalid_fields import INVALID_FIELDS
from tests.support.crd_invalid_shapes import INVALID_SHAPES
from tests.support.crd_jobs import (
    EXAMPLES,
    LEGACY,
    MXNET,
    SUBDOMAIN_253,
    containers,
    job,
    load,
    run_policy,
    worker,
)

__all__ = ["INVALID", "VALID", "job"]

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


INVALID = [*INVALID_SHAPES, *INVALID_FIELDS]
