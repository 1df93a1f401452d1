"""User text in a job (a tuner-server-key annotation, a legacy `label`, a template's own
annotations and env) reaches every process and every child exactly as written, in each layout
of MX_CONFIG: through the kubelet's `$(VAR)` expansion (app/core/mxnet/kubeenv.py), `$` and `$(...)`
included."""

import json
from typing import Any

import pytest
import yaml

from app.core.model import kinds
from app.core.mxnet import kubeenv, mxconfig
from app.core.render import INLINE_CHILD_TYPES, render
from tests.support import cli
from tests.support import jobs as s
from tests.support.golden_cases import released_0_1_0
from tests.support.user_text import ANNOTATION, THEIRS, expected_labels, tune_job

# Each is a label as a user writes it; the kubelet would alter every one of them if it were
# written into an env value as it is (`$$`, `$(DMLC_ROLE)`, a defined variable), or keep
# it only by luck (an undefined name, an unclosed `$(`, a lone `$`).
TEXTS = [
    pytest.param("rtx-$$-$(DMLC_ROLE)-$(HOME)-$", id="issue-example"),
    pytest.param("$", id="lone-dollar"),
    pytest.param("$$", id="escaped-dollar"),
    pytest.param("$(X)", id="undefined-reference"),
    pytest.param("$(", id="unclosed-reference"),
    pytest.param("a$(b", id="unclosed-reference-inside"),
    pytest.param("$(MX_CONFIG_CLUSTER)", id="one-of-our-variables"),
    pytest.param("$$$(DMLC_ROLE)$$$$", id="odd-and-even-runs"),
    pytest.param("é$é-$ü", id="dollar-before-non-ascii"),
    pytest.param('"\\$<&>', id="json-and-go-escapes"),
    pytest.param("gpu-a100", id="no-dollar"),
]


def _answer(job: dict[str, Any], layout: str) -> dict[str, Any]:
    if layout == "inline":
        return s.created(s.request(job))
    answer = s.created(s.request(job, others={kinds.CONFIG_MAP_TYPE: []}))
    return released_0_1_0(answer) if layout == "release-0.1.0" else answer


def _processes(children: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Each container's environment as its process starts with it, by pod and container."""
    maps = {c["metadata"]["name"]: c for c in children if c["kind"] == "ConfigMap"}
    return {
        f"{pod['metadata']['name']}/{container['name']}": kubeenv.resolve(container, maps)
        for pod in children
        if pod["kind"] == "Pod"
        for container in pod["spec"]["containers"]
    }


@pytest.mark.parametrize("layout", ["inline", "configmap", "release-0.1.0"])
@pytest.mark.parametrize("text", TEXTS)
def test_every_process_reads_the_text_as_written(text: str, layout: str) -> None:
    answer = _answer(tune_job(text), layout)
    processes = _processes(answer["children"])
    assert len(processes) == 4
    for name, env in processes.items():
        assert json.loads(env["MX_CONFIG"])["labels"] == expected_labels(text), name
        assert env["DMLC_ROLE"] == name.split("-")[1]
    servers = {k: v for k, v in processes.items() if k.startswith("tune-tunerserver-")}
    assert {env["MINE"] for env in servers.values()} == {"$-tunerserver"}


@pytest.mark.parametrize("layout", ["inline", "configmap"])
def test_children_carry_the_templates_text_untouched(layout: str) -> None:
    """A template's own annotations and env entries are the user's to write for the kubelet:
    the pod carries them as written (the process reads what it would read without us)."""
    text = "rtx-$$-$(DMLC_ROLE)-$(HOME)-$"
    answer = _answer(tune_job(text), layout)
    for pod in (c for c in answer["children"] if c["kind"] == "Pod"):
        if "tunerserver" not in pod["metadata"]["name"]:
            continue
        annotations = pod["metadata"]["annotations"]
        assert annotations == {mxconfig.TUNER_SERVER_KEY: text} | ANNOTATION
        assert pod["spec"]["containers"][0]["env"][-1] == THEIRS


def test_inline_text_doubles_each_dollar_and_nothing_else() -> None:
    """What the inline layout writes: the JSON text with `$` as `$$`, so the kubelet's
    expansion, which turns `$$` into `$` and leaves everything else that is not a
    reference as it is, gives back the JSON text."""
    text = "rtx-$$-$(DMLC_ROLE)-$(HOME)-$"
    pod = next(c for c in _answer(tune_job(text), "inline")["children"] if c["kind"] == "Pod")
    (written,) = [
        e["value"] for e in pod["spec"]["containers"][0]["env"] if e["name"] == "MX_CONFIG"
    ]
    read = kubeenv.expand(written, {"DMLC_ROLE": "tunerserver", "HOME": "/root"})
    assert written == read.replace("$", "$$")
    assert '"tunerserver":"rtx-$$$$-$$(DMLC_ROLE)-$$(HOME)-$$"' in written


@pytest.mark.parametrize("child_types", [INLINE_CHILD_TYPES, None])
def test_render_expand_shows_the_text_as_written(child_types: tuple[str, ...] | None) -> None:
    text = "rtx-$$-$(DMLC_ROLE)-$(HOME)-$"
    manifest = yaml.safe_dump(tune_job(text))
    rendered = (
        render(manifest, s.NOW, expand=True, child_types=child_types)
        if child_types
        else render(manifest, s.NOW, expand=True)
    )
    pods = [d for d in yaml.safe_load_all(rendered) if d["kind"] == "Pod"]
    assert len(pods) == 4
    for pod in pods:
        env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
        assert json.loads(env["MX_CONFIG"])["labels"] == expected_labels(text)


def test_the_command_line_renders_the_inline_layout(tmp_path: Any) -> None:
    path = tmp_path / "tune.yaml"
    path.write_text(yaml.safe_dump(tune_job("$(DMLC_ROLE)")))
    done = cli.run("render", "--expand", "--no-configmaps", str(path))
    assert done.returncode == 0, done.stderr  # the legacy label is noted on stderr
    documents = list(yaml.safe_load_all(done.stdout))
    assert "ConfigMap" not in {d["kind"] for d in documents}
    (tracker,) = [
        d
        for d in documents
        if d["kind"] == "Pod" and d["metadata"]["name"] == "tune-tunertracker-0"
    ]
    env = {e["name"]: e["value"] for e in tracker["spec"]["containers"][0]["env"]}
    assert json.loads(env["MX_CONFIG"])["labels"]["tunerserver"] == "$(DMLC_ROLE)"
