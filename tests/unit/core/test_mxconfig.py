"""What a pod is made of beyond the user's template (app/core/mxnet/mxconfig.py): the mxnet
container and its port, MX_CONFIG's text and the job-wide variables, and MX_CONFIG's length
worked out from the counts alone, against the text itself."""

import json
from typing import Any

import pytest

from app.core.model.spec import MXJobSpec, ReplicaSpec, ReplicaType
from app.core.mxnet import mxconfig
from tests.support.jobs import container, replica, train_spec

SIDECAR = {"name": "sidecar", "image": "busybox"}
# A replica whose mxnet container declares its own mxjob-port.
OWN_PORT = {
    "replicas": 3,
    "template": {
        "spec": {"containers": [container(ports=[{"name": "mxjob-port", "containerPort": 7000}])]}
    },
}
TUNE = {
    "jobMode": "MXTune",
    "mxReplicaSpecs": {
        "TunerTracker": replica(),
        "TunerServer": replica(2, metadata={"annotations": {"tuner-server-key": "ts"}}),
        "Tuner": replica(),
    },
}


def spec_of(raw: dict[str, Any]) -> MXJobSpec:
    return MXJobSpec.model_validate(raw)


def replica_of(*containers: dict[str, Any], **extra: Any) -> ReplicaSpec:
    return ReplicaSpec.model_validate(
        {"template": {"spec": {"containers": list(containers)}}} | extra
    )


def mx_config(name: str, raw: dict[str, Any], rtype: ReplicaType, index: int) -> str:
    """MX_CONFIG as a pod of that replica reads it: the shared parts joined around its index."""
    parts = mxconfig.shared_parts(name, spec_of(raw))
    before, after = mxconfig.mx_config_around_index(
        parts["MX_CONFIG_CLUSTER"], parts["MX_CONFIG_LABELS"], rtype.lowered
    )
    return f"{before}{index}{after}"


@pytest.mark.parametrize(
    ("containers", "expected"),
    [
        pytest.param([container()], container(), id="the-only-one"),
        pytest.param([SIDECAR, container(args=["x"])], container(args=["x"]), id="after-a-sidecar"),
    ],
)
def test_main_container(containers: list[dict[str, Any]], expected: dict[str, Any]) -> None:
    assert mxconfig.main_container({"spec": {"containers": containers}}) == expected


@pytest.mark.parametrize(
    ("mxnet", "expected"),
    [
        pytest.param(container(), 9091, id="no-ports-the-default"),
        pytest.param(container(ports=[{"name": "http", "containerPort": 80}]), 9091,
                     id="another-port-the-default"),
        pytest.param(container(ports=[{"name": "http", "containerPort": 80},
                                      {"name": "mxjob-port", "containerPort": 7000}]), 7000,
                     id="the-named-port"),
    ],
)  # fmt: skip
def test_main_port(mxnet: dict[str, Any], expected: int) -> None:
    assert mxconfig.main_port(replica_of(SIDECAR, mxnet)) == expected


@pytest.mark.parametrize(
    ("port", "expected"),
    [
        pytest.param({"containerPort": 80}, {"name": "port-80", "port": 80, "targetPort": 80},
                     id="unnamed"),
        pytest.param({"name": "http", "containerPort": 80, "protocol": "UDP"},
                     {"name": "http", "port": 80, "targetPort": 80, "protocol": "UDP"},
                     id="named-with-protocol"),
    ],
)  # fmt: skip
def test_service_port(port: dict[str, Any], expected: dict[str, Any]) -> None:
    assert mxconfig.service_port(port) == expected


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        pytest.param({}, "", id="none"),
        pytest.param({"label": "legacy"}, "legacy", id="legacy-field"),
        pytest.param({"label": "legacy", "template": {
            "metadata": {"annotations": {"tuner-server-key": "ts"}}, "spec": {"containers": []}}},
            "ts", id="annotation-wins"),
    ],
)  # fmt: skip
def test_tuner_label(extra: dict[str, Any], expected: str) -> None:
    assert mxconfig.tuner_label(replica_of(container(), **extra)) == expected


@pytest.mark.parametrize(
    ("function", "argument", "expected"),
    [
        pytest.param(mxconfig.config_map_name, "mnist", "mnist-mx-config", id="config-map-name"),
        pytest.param(mxconfig.kubelet_literal, "a$(B)$$c", "a$$(B)$$$$c", id="dollars-doubled"),
        pytest.param(mxconfig.kubelet_literal, "plain", "plain", id="no-dollar"),
    ],
)
def test_names_and_literals(function: Any, argument: str, expected: str) -> None:
    assert function(argument) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(
            train_spec(servers=1, workers=2),
            {
                "MX_CONFIG_CLUSTER": '{"scheduler":[{"port":9091,"url":"mnist-scheduler-0"}],'
                '"server":[{"port":9091,"url":"mnist-server-0"}],'
                '"worker":[{"port":9091,"url":"mnist-worker-0"},'
                '{"port":9091,"url":"mnist-worker-1"}]}',
                "MX_CONFIG_LABELS": '{"scheduler":"","server":"","worker":""}',
            },
            id="train",
        ),
        pytest.param(
            {"mxReplicaSpecs": {"Worker": replica(0)}},
            {"MX_CONFIG_CLUSTER": '{"worker":[]}', "MX_CONFIG_LABELS": '{"worker":""}'},
            id="no-replicas",
        ),
        pytest.param(
            TUNE,
            {
                "MX_CONFIG_CLUSTER": '{"tuner":[{"port":9091,"url":"mnist-tuner-0"}],'
                '"tunerserver":[{"port":9091,"url":"mnist-tunerserver-0"},'
                '{"port":9091,"url":"mnist-tunerserver-1"}],'
                '"tunertracker":[{"port":9091,"url":"mnist-tunertracker-0"}]}',
                "MX_CONFIG_LABELS": '{"tuner":"","tunerserver":"ts","tunertracker":""}',
            },
            id="tune-with-a-label",
        ),
    ],
)
def test_shared_parts(raw: dict[str, Any], expected: dict[str, str]) -> None:
    spec = spec_of(raw)
    assert mxconfig.shared_parts("mnist", spec) == expected
    assert mxconfig.labels_text(spec) == expected["MX_CONFIG_LABELS"]


@pytest.mark.parametrize(
    ("cluster", "labels", "kind", "expected"),
    [
        pytest.param(
            '{"worker":[]}',
            '{"worker":""}',
            "worker",
            ('{"cluster":{"worker":[]},"labels":{"worker":""},"task":{"index":', ',"type":"worker"}}'),
            id="json-text",
        ),
        pytest.param(
            "$(MX_CONFIG_CLUSTER)",
            "$(MX_CONFIG_LABELS)",
            "server",
            ('{"cluster":$(MX_CONFIG_CLUSTER),"labels":$(MX_CONFIG_LABELS),"task":{"index":',
             ',"type":"server"}}'),
            id="references",
        ),
    ],
)  # fmt: skip
def test_mx_config_around_index(
    cluster: str, labels: str, kind: str, expected: tuple[str, str]
) -> None:
    assert mxconfig.mx_config_around_index(cluster, labels, kind) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(
            train_spec(servers=2, workers=3),
            ("mnist-scheduler-0", "9091", "2", "3"),
            id="train",
        ),
        pytest.param(
            {"mxReplicaSpecs": {"Worker": replica(4)}}, ("", "0", "0", "4"), id="no-scheduler"
        ),
        pytest.param(
            {"mxReplicaSpecs": {"Scheduler": OWN_PORT, "Worker": replica()}},
            ("mnist-scheduler-0", "7000", "0", "1"),
            id="the-schedulers-own-port",
        ),
    ],
)  # fmt: skip
def test_dmlc_env(raw: dict[str, Any], expected: tuple[str, str, str, str]) -> None:
    names = ("DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NUM_SERVER", "DMLC_NUM_WORKER")
    assert mxconfig.dmlc_env("mnist", spec_of(raw)) == tuple(
        {"name": name, "value": value} for name, value in zip(names, expected, strict=True)
    )


def test_legacy_key_env() -> None:
    def by_key(key: str) -> dict[str, Any]:
        return {"configMapKeyRef": {"name": "mnist-mx-config", "key": key}}

    assert mxconfig.legacy_key_env("mnist") == (
        {"name": "MX_CONFIG_CLUSTER", "valueFrom": by_key("cluster")},
        {"name": "MX_CONFIG_LABELS", "valueFrom": by_key("labels")},
    )


# Shapes whose counts cross the widths of their indices, names of several lengths, a tune job
# with a label and a replica type on its own port: MX_CONFIG's length and its cluster's counts
# as worked out, against the text.
SIZES = [
    pytest.param("mnist", train_spec(servers=1, workers=2), id="train"),
    pytest.param("a", train_spec(servers=0, workers=10), id="ten-workers"),
    pytest.param("job-" + "x" * 40, train_spec(servers=11, workers=101), id="three-digit-index"),
    pytest.param("mnist", {"mxReplicaSpecs": {"Worker": replica(1)}}, id="single-worker"),
    pytest.param("tune", TUNE, id="tune-with-a-label"),
    pytest.param("mnist", {"mxReplicaSpecs": {"Worker": OWN_PORT}}, id="own-port"),
]


@pytest.mark.parametrize(("name", "raw"), SIZES)
def test_mx_config_bytes_is_the_longest_mx_config(name: str, raw: dict[str, Any]) -> None:
    spec = spec_of(raw)
    texts = [
        mx_config(name, raw, rtype, index)
        for rtype, r in spec.mxReplicaSpecs.items()
        for index in range(r.replicas)
    ]
    assert [json.loads(text)["task"]["type"] for text in texts] == [
        rtype.lowered for rtype, r in spec.mxReplicaSpecs.items() for _ in range(r.replicas)
    ]
    assert mxconfig.mx_config_bytes(name, spec) == max(len(text) for text in texts)


@pytest.mark.parametrize(
    ("name", "raw"),
    [*SIZES, pytest.param("mnist", {"mxReplicaSpecs": {"Worker": replica(0)}}, id="no-replicas")],
)
def test_cluster_text_counts_are_the_texts(name: str, raw: dict[str, Any]) -> None:
    text = mxconfig.shared_parts(name, spec_of(raw))["MX_CONFIG_CLUSTER"]
    counted = (len(text), text.count('"'), text.count("{") + text.count("["), text.count(","))
    assert mxconfig.cluster_text_counts(name, spec_of(raw)) == counted
