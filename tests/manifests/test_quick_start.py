"""README's quick start, its commands run as written (tests/support/dryrun.py): no Docker engine
or cluster here, so what needs one is recorded and checked."""

import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from app import __version__
from tests.support import REPO
from tests.support.dryrun import applied, asked, checkout, images, run, sh_blocks

README = REPO / "README.md"
REGISTRY = "registry.example.com/ml"


def quick_start() -> list[str]:
    """The sh blocks of README's quick start, in order."""
    section = README.read_text().split("## Quick start\n", 1)[1].split("\n## ", 1)[0]
    return sh_blocks(section)


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of what docker and kubectl were asked."""
    home, out = checkout(tmp_path_factory.mktemp("checkout")), tmp_path_factory.mktemp("out")
    run("\n".join(quick_start()), home, out)
    return out


def pushed(out: Path) -> set[str]:
    return {command[1] for command in asked(out, "docker") if command[0] == "push"}


def test_the_quick_start_says_no_release_is_tagged_while_none_is() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text()
    unreleased = f"## [{__version__}]" not in changelog
    first = README.read_text().split("## Quick start\n", 1)[1].lstrip()
    assert first.startswith("**No release is tagged yet**") == unreleased
    assert f"{__version__} is `[Unreleased]`" in first.split("\n\n", 1)[0]


def test_it_builds_and_pushes_both_images_and_the_gpu_variant(out: Path) -> None:
    built = {}
    for command in asked(out, "docker"):
        if command[0] == "build":
            tag, context = command[command.index("-t") + 1], command[-1]
            default = str(Path(context) / "Dockerfile")  # docker's: the context's Dockerfile
            dockerfile = command[command.index("-f") + 1] if "-f" in command else default
            assert (REPO / context).is_dir(), command
            assert (REPO / dockerfile).is_file(), command
            built[tag] = dockerfile
    examples = (REPO / "examples" / "image" / "IMAGE").read_text().strip().split(":")[1]
    assert built == {
        f"{REGISTRY}/mxjob-controller:{__version__}": "Dockerfile",
        f"{REGISTRY}/mxnet-examples:{examples}": "examples/image/Dockerfile",
        f"{REGISTRY}/mxnet-examples:{examples}-gpu": "examples/image/Dockerfile.gpu",
    }
    assert pushed(out) == set(built)


def test_the_overlay_and_the_example_run_the_images_pushed(out: Path) -> None:
    objects = applied(out)
    deployments = [d for d in objects if d["kind"] == "Deployment"]
    assert images(deployments, "Deployment") == {f"{REGISTRY}/mxjob-controller:{__version__}"}
    assert images(objects, "MXJob") == {f"{REGISTRY}/mxnet-examples:1.9.1"}
    assert images(objects, "MXJob") <= pushed(out)
    assert [o["kind"] for o in objects].count("CompositeController") == 2  # applied twice


@pytest.mark.parametrize(
    "example", sorted((REPO / "examples").rglob("*.yaml")), ids=lambda p: p.name
)
def test_the_same_sed_points_every_example_at_a_pushed_image(out: Path, example: Path) -> None:
    (sed,) = re.findall(r"^(sed \S+) ", "\n".join(quick_start()), re.M)
    script = f"REGISTRY={REGISTRY}; {sed} {shlex.quote(str(example))}"
    text = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    assert images(list(yaml.safe_load_all(text.stdout)), "MXJob") <= pushed(out)
