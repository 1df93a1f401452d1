"""The local kubelet of `make demo` and tests/e2e resolves a container's env as a kubelet does."""

from pathlib import Path

import pytest

from e2e.cluster import ClusterError, argv, container_env, local_workdir
from e2e.images import CHECKS_IMAGE, EXAMPLES_IMAGE
from tests.support import REPO

CONFIG_MAPS = {"job-config": {"cluster": '{"scheduler": ["s-0:9091"]}', "port": "9091"}}


def lookup(name: str) -> dict[str, str]:
    return CONFIG_MAPS[name]


def ref(name: str, config_map: str, key: str, **extra: object) -> dict[str, object]:
    selector = {"name": config_map, "key": key} | extra
    return {"name": name, "valueFrom": {"configMapKeyRef": selector}}


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        pytest.param([{"name": "A", "value": "1"}], {"A": "1"}, id="literal"),
        pytest.param(
            [ref("C", "job-config", "cluster")],
            {"C": '{"scheduler": ["s-0:9091"]}'},
            id="configmap-key",
        ),
        pytest.param(
            [ref("P", "job-config", "port"), {"name": "U", "value": "host:$(P)"}],
            {"P": "9091", "U": "host:9091"},
            id="reference-to-earlier",
        ),
        pytest.param(
            [{"name": "U", "value": "$(LATER)"}, {"name": "LATER", "value": "x"}],
            {"U": "$(LATER)", "LATER": "x"},
            id="reference-to-later-stays",
        ),
        pytest.param(
            [{"name": "U", "value": "$$(A) $$"}, {"name": "A", "value": "1"}],
            {"U": "$(A) $", "A": "1"},
            id="dollar-escape",
        ),
        pytest.param(
            [ref("O", "job-config", "absent", optional=True)], {}, id="optional-missing-key"
        ),
    ],
)
def test_env_is_resolved(env: list[dict[str, object]], expected: dict[str, str]) -> None:
    assert container_env({"name": "mxnet", "env": env}, lookup) == expected


@pytest.mark.parametrize(
    ("env", "message"),
    [
        pytest.param(
            [ref("M", "job-config", "absent")],
            "couldn.t find key absent in ConfigMap job-config",
            id="missing-key",
        ),
        pytest.param(
            [{"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "only configMapKeyRef sources are modelled",
            id="field-ref",
        ),
    ],
)
def test_env_that_cannot_run_locally_is_refused(env: list[dict[str, object]], message: str) -> None:
    with pytest.raises(ClusterError, match=message):
        container_env({"name": "mxnet", "env": env}, lookup)


def test_command_and_args_expand_references() -> None:
    container = {"command": ["python", "$(PROGRAM)"], "args": ["--port=$(P)", "$(NOPE)"]}
    assert argv(container, {"PROGRAM": "train.py", "P": "9091"}) == [
        "python",
        "train.py",
        "--port=9091",
        "$(NOPE)",
    ]


@pytest.mark.parametrize(
    ("image", "folder"),
    [
        pytest.param(EXAMPLES_IMAGE, REPO / "examples" / "image", id="examples-image"),
        pytest.param(CHECKS_IMAGE, REPO, id="checks"),
    ],
)
def test_a_container_runs_in_the_folder_its_image_is_built_from(image: str, folder: Path) -> None:
    assert local_workdir(image) == folder
    assert (local_workdir(EXAMPLES_IMAGE) / "train.py").is_file()


def test_an_image_without_a_local_stand_in_is_refused_by_name() -> None:
    with pytest.raises(ClusterError, match=r"no local stand-in for image 'mxjob/mxnet:1\.9\.1'"):
        local_workdir("mxjob/mxnet:1.9.1")
