"""docs/migrating-from-training-operator.md, "From a fresh clone to a running job": each way's
steps run as written (tests/support/dryrun.py), up to what needs a registry or a cluster."""

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from app import __version__
from tests.support import REPO, cli
from tests.support.dryrun import applied, asked, checkout, images, run, sh_blocks

PAGE = REPO / "docs" / "migrating-from-training-operator.md"
HOOK = f"ghcr.io/mxjob-controller/mxjob-controller:{__version__}"
PODGROUPS = {
    "volcano": "podgroups.scheduling.volcano.sh/v1beta1",
    "scheduler-plugins": "podgroups.scheduling.x-k8s.io/v1alpha1",
}


def section() -> str:
    text = PAGE.read_text()
    return text.split("## From a fresh clone to a running job\n", 1)[1].split("\n## ", 1)[0]


def steps() -> list[str]:
    """The section's numbered steps, each with its text."""
    return re.split(r"^\d\. ", section(), flags=re.M)[1:]


def ways() -> dict[str, str]:
    """Each way's overlay block, by its heading in step 3."""
    parts = re.split(r"^ *### (.+)\n", steps()[2], flags=re.M)[1:]
    return {name: sh_blocks(text)[0] for name, text in zip(parts[::2], parts[1::2], strict=True)}


def job_block(needle: str) -> str:
    (block,) = [b for b in sh_blocks(steps()[4]) if needle in b]
    return block


# Each way, in the page's order, and a word of its job's block in step 5.
JOBS = {
    "Plain": "examples/dist-cpu.yaml",
    "With Kueue": "examples/kueue/job.yaml",
    "With gang scheduling": "examples/dist-cpu.yaml",
    "With Katib": "katib-config",
}


Followed = Callable[..., Path]


@pytest.fixture(scope="module")
def follow(tmp_path_factory: pytest.TempPathFactory) -> Followed:
    """Steps 2 to 5 of a way, each text replaced as `changes` say, run once per module; the
    folder of what was asked."""

    @functools.cache
    def followed(way: str, *changes: tuple[str, str]) -> Path:
        blocks = [sh_blocks(steps()[1])[0], ways()[way], sh_blocks(steps()[3])[0]]
        script = "\n".join([*blocks, job_block(JOBS[way])])
        for old, new in changes:
            assert old in script
            script = script.replace(old, new)
        home = checkout(tmp_path_factory.mktemp("home"))
        # Katib's Experiment, saved as the page says, is docs/katib.md's.
        (home / "experiment.yaml").write_text(yaml.safe_dump(experiment()))
        out = tmp_path_factory.mktemp("out")
        run(script, home, out)
        return out

    return followed


def experiment() -> dict[str, Any]:
    katib = (REPO / "docs" / "katib.md").read_text()
    documents = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", katib, re.S)]
    (found,) = [d for d in documents if d["kind"] == "Experiment"]
    return dict(found)


def controller(objects: list[dict[str, Any]]) -> dict[str, Any]:
    # Applied twice, the same both times: the last is what the cluster keeps.
    controllers = [o for o in objects if o["kind"] == "CompositeController"]
    return controllers[-1]


def child_types(objects: list[dict[str, Any]]) -> set[str]:
    children = controller(objects)["spec"]["childResources"]
    return {f"{c['resource']}.{c['apiVersion']}" for c in children}


def test_the_section_has_every_way_and_five_steps() -> None:
    assert len(steps()) == 5
    assert list(ways()) == list(JOBS)


def test_step_1_makes_the_venv_as_make_run_does_and_says_it_blocks() -> None:
    block = sh_blocks(steps()[0])[0]
    assert (
        "python3 -m venv .venv\n.venv/bin/pip install --require-hashes -r requirements.lock\n"
        in block
    )
    makefile = (REPO / "Makefile").read_text()
    assert "$(PYTHON) -m venv $(VENV)" in makefile
    assert "$(BIN)/pip install --quiet --require-hashes -r requirements.lock" in makefile
    assert "holds its terminal until Ctrl-C" in steps()[0]


@pytest.mark.parametrize("way", list(JOBS))
def test_each_way_installs_the_hook_twice_from_its_overlay(follow: Followed, way: str) -> None:
    objects = applied(follow(way))
    kinds = [o["kind"] for o in objects]
    assert kinds.count("CompositeController") == 2
    hooks = [o for o in objects if o["kind"] == "Deployment" and "mxjob" in o["metadata"]["name"]]
    assert images(hooks, "Deployment") == {HOOK}
    assert "StatefulSet" in kinds  # Metacontroller, with-metacontroller's


def test_your_registry_is_the_one_variable(follow: Followed) -> None:
    mine = "registry.example.com/ml"
    out = follow("Plain", ("REGISTRY=ghcr.io/mxjob-controller", f"REGISTRY={mine}"))
    objects = applied(out)
    hooks = [o for o in objects if o["kind"] == "Deployment" and "mxjob" in o["metadata"]["name"]]
    assert images(hooks, "Deployment") == {f"{mine}/mxjob-controller:{__version__}"}
    assert images(objects, "MXJob") == {f"{mine}/mxnet-examples:1.9.1"}


@pytest.mark.parametrize("gang", list(PODGROUPS))
def test_gang_scheduling_declares_the_schedulers_podgroup(follow: Followed, gang: str) -> None:
    out = follow("With gang scheduling", ("GANG=volcano", f"GANG={gang}"))
    objects = applied(out)
    assert PODGROUPS[gang] in child_types(objects)
    (job,) = [o for o in objects if o["kind"] == "MXJob"]
    assert job["metadata"]["name"] in job_block("examples/dist-cpu.yaml")


def test_kueue_declares_workloads_and_queues_the_job(follow: Followed) -> None:
    objects = applied(follow("With Kueue"))
    assert "workloads.kueue.x-k8s.io/v1beta2" in child_types(objects)
    assert {"ResourceFlavor", "ClusterQueue", "LocalQueue"} <= {o["kind"] for o in objects}
    writers = [o for o in objects if o["metadata"]["name"] == "mxjob-controller-kueue-status"]
    assert "Deployment" in {o["kind"] for o in writers}
    (job,) = [o for o in objects if o["kind"] == "MXJob"]
    (queue,) = [o for o in objects if o["kind"] == "LocalQueue"]
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == queue["metadata"]["name"]
    assert job["metadata"]["name"] in job_block("examples/kueue/job.yaml")


def test_katib_gets_its_permissions_and_the_steps_katib_md_gives(follow: Followed) -> None:
    out = follow("With Katib")
    objects = applied(out)
    roles = {o["metadata"]["name"] for o in objects if o["kind"] == "ClusterRole"}
    assert "katib-controller-mxjobs" in roles
    assert [o for o in objects if o["kind"] == "Experiment"] == [experiment()]
    assert asked(out, "kubectl")[-3:] == [
        ["-n", "kubeflow", "edit", "configmap", "katib-config"],
        ["-n", "kubeflow", "rollout", "restart", "deployment/katib-controller"],
        ["-n", "kubeflow", "get", "experiment", experiment()["metadata"]["name"], "--watch"],
    ]


@pytest.mark.parametrize("way", ["Plain", "With Kueue"])
def test_the_jobs_pass_the_render_check(follow: Followed, way: str) -> None:
    jobs = [o for o in applied(follow(way)) if o["kind"] == "MXJob"]
    done = cli.run("render", "-", stdin=yaml.safe_dump_all(jobs))
    assert (done.returncode, done.stderr) == (0, "")


def test_step_2_says_no_release_is_tagged_while_none_is() -> None:
    unreleased = f"## [{__version__}]" not in (REPO / "CHANGELOG.md").read_text()
    assert (f"{__version__} is `[Unreleased]`" in steps()[1]) == unreleased
