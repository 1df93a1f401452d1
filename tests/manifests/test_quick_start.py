"""README's quick start, its commands run as written in a copy of the checkout, up to what needs
a registry or a cluster: `docker` only records what it is asked (no engine runs here), and
`kubectl apply` builds (`kubectl kustomize`) or reads what it would apply."""

import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from app import __version__
from tests.support import REPO
from tests.support.kustomize import kubectl

README = REPO / "README.md"
# What the commands see of the checkout.
CHECKOUT = ("Dockerfile", "manifests", "examples")
STUBS = r"""
docker() { printf '%s\n' "$*" >> "$OUT/docker"; }
kubectl() {
    case "$1 $2" in
        "apply -k") "$KUBECTL" kustomize "$3" >> "$OUT/applied.yaml"; echo --- >> "$OUT/applied.yaml" ;;
        "apply -f") cat "$3" >> "$OUT/applied.yaml"; echo --- >> "$OUT/applied.yaml" ;;
        *) printf '%s\n' "$*" >> "$OUT/kubectl" ;;
    esac
}
"""


def quick_start() -> list[str]:
    """The sh blocks of README's quick start, in order."""
    section = README.read_text().split("## Quick start\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```sh\n(.*?)^```", section, re.M | re.S)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the copy of the checkout, the folder of what docker and kubectl were asked)."""
    home, out = tmp_path_factory.mktemp("checkout"), tmp_path_factory.mktemp("out")
    for name in CHECKOUT:
        (home / name).symlink_to(REPO / name)
    script = STUBS + "set -eu\n" + "\n".join(quick_start())
    env = {"PATH": "/usr/bin:/bin", "OUT": str(out), "KUBECTL": kubectl()}
    done = subprocess.run(["bash", "-c", script], cwd=home, env=env, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    # kustomize warns of Metacontroller's own `commonLabels`; anything else is an error.
    errors = [line for line in done.stderr.splitlines() if not line.startswith("# Warning: ")]
    assert (done.returncode, errors) == (0, []), done.stderr
    return home, out


def docker(out: Path) -> list[list[str]]:
    return [shlex.split(line) for line in (out / "docker").read_text().splitlines()]


def applied(out: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((out / "applied.yaml").read_text()) if d]


def images(objects: list[dict[str, Any]], kind: str) -> set[str]:
    found = set()
    for obj in (o for o in objects if o["kind"] == kind):
        specs = [r["template"]["spec"] for r in obj["spec"].get("mxReplicaSpecs", {}).values()]
        specs += [obj["spec"]["template"]["spec"]] if "template" in obj["spec"] else []
        found |= {c["image"] for spec in specs for c in spec["containers"]}
    return found


def test_the_quick_start_says_no_release_is_tagged_while_none_is() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text()
    unreleased = f"## [{__version__}]" not in changelog
    first = README.read_text().split("## Quick start\n", 1)[1].lstrip()
    assert first.startswith("**No release is tagged yet**") == unreleased
    assert f"{__version__} is `[Unreleased]`" in first.split("\n\n", 1)[0]


def test_it_builds_and_pushes_both_images_and_the_gpu_variant(ran: tuple[Path, Path]) -> None:
    home, out = ran
    built = {}
    for command in docker(out):
        if command[0] == "build":
            tag, context = command[command.index("-t") + 1], command[-1]
            default = str(Path(context) / "Dockerfile")  # docker's: the context's Dockerfile
            dockerfile = command[command.index("-f") + 1] if "-f" in command else default
            assert (home / context).is_dir(), command
            assert (home / dockerfile).is_file(), command
            built[tag] = dockerfile
    pushed = [command[1] for command in docker(out) if command[0] == "push"]
    examples = (REPO / "examples" / "image" / "IMAGE").read_text().strip().split(":")[1]
    assert built == {
        f"registry.example.com/ml/mxjob-controller:{__version__}": "Dockerfile",
        f"registry.example.com/ml/mxnet-examples:{examples}": "examples/image/Dockerfile",
        f"registry.example.com/ml/mxnet-examples:{examples}-gpu": "examples/image/Dockerfile.gpu",
    }
    assert sorted(pushed) == sorted(built)


def test_the_overlay_and_the_example_run_the_images_pushed(ran: tuple[Path, Path]) -> None:
    _, out = ran
    objects = applied(out)
    pushed = {command[1] for command in docker(out) if command[0] == "push"}
    deployments = {d["metadata"]["name"]: d for d in objects if d["kind"] == "Deployment"}
    hook = images([deployments["mxjob-controller"]], "Deployment")
    assert hook == {f"registry.example.com/ml/mxjob-controller:{__version__}"} <= pushed
    assert images(objects, "MXJob") == {"registry.example.com/ml/mxnet-examples:1.9.1"}
    assert [o["kind"] for o in objects].count("CompositeController") == 2  # applied twice


@pytest.mark.parametrize(
    "example", sorted((REPO / "examples").rglob("*.yaml")), ids=lambda p: p.name
)
def test_the_same_sed_points_every_example_at_a_pushed_image(
    ran: tuple[Path, Path], example: Path
) -> None:
    _, out = ran
    (sed,) = re.findall(r"^(sed \S+) ", "\n".join(quick_start()), re.M)
    script = f"REGISTRY=registry.example.com/ml; {sed} {shlex.quote(str(example))}"
    text = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    pushed = {command[1] for command in docker(out) if command[0] == "push"}
    assert images(list(yaml.safe_load_all(text.stdout)), "MXJob") <= pushed
