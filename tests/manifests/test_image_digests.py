"""A release lists every image it pushes by digest (images.txt on its GitHub release): the
workflow's own steps run with a stand-in for the push and for `gh`; and docs/install.md's
kustomize block pins the hook by that digest."""

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from app import __version__
from e2e.images import EXAMPLES_IMAGE
from tests.support import REPO
from tests.support.kustomize import documents
from tests.support.overlays import IMAGE

WORKFLOW = REPO / ".github" / "workflows" / "ci.yaml"
INSTALL = REPO / "docs" / "install.md"
DIGESTS = {"push": "1" * 64, "push-cpu": "2" * 64, "push-gpu": "3" * 64}
EXPRESSION = re.compile(r"\$\{\{\s*steps\.([\w-]+)\.outputs\.digest\s*\}\}")


def jobs() -> dict[str, Any]:
    found: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    return found


def run(step: dict[str, Any], cwd: Path, env: dict[str, str]) -> None:
    """A `run` step under bash, its `${{ steps.ID.outputs.digest }}` as the stand-in push's."""
    own = {
        k: EXPRESSION.sub(lambda m: f"sha256:{DIGESTS[m[1]]}", v)
        for k, v in step.get("env", {}).items()
    }
    done = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", step["run"]], cwd=cwd, env=os.environ | env | own,
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def recording_steps(job: str) -> list[dict[str, Any]]:
    steps = jobs()[job]["steps"]
    pushes = [s["id"] for s in steps if s.get("with", {}).get("push") is True]
    assert pushes, f"{job} pushes no image with an id"
    recorders = [s for s in steps if EXPRESSION.search(str(s.get("env", {})))]
    assert {m for s in recorders for m in EXPRESSION.findall(str(s["env"]))} == set(pushes)
    return recorders


def test_every_pushed_image_is_listed_by_digest_on_the_release(tmp_path: Path) -> None:
    name, mxnet = EXAMPLES_IMAGE.rsplit(":", 1)
    summary, calls = tmp_path / "summary", tmp_path / "gh-calls"
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "gh").write_text(f'#!/bin/sh\necho "$*" >>{calls}\n[ "$2" != view ]\n')
    (fake_bin / "gh").chmod(0o755)
    env = {
        "IMAGE": IMAGE, "VERSION": __version__, "EXAMPLES_IMAGE": name, "MXNET": mxnet,
        "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_REF_NAME": f"v{__version__}",
        "PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}",
    }  # fmt: skip
    for job in ("image", "examples-image"):
        for step in recording_steps(job):
            run(step, tmp_path, env)
        uploads = [
            s["with"] for s in jobs()[job]["steps"] if "upload-artifact" in s.get("uses", "")
        ]
        assert [
            (u["name"].startswith("digests-"), (tmp_path / u["path"]).exists()) for u in uploads
        ] == [(True, True)]
    release = jobs()["release-digests"]
    assert (set(release["needs"]), release["if"]) == (
        {"image", "examples-image"},
        "startsWith(github.ref, 'refs/tags/v')",
    )
    (download, attach) = release["steps"]
    assert download["with"] == {"pattern": "digests-*", "merge-multiple": True}
    run(attach, tmp_path, env)
    assert (tmp_path / "images.txt").read_text().splitlines() == [
        f"{IMAGE}:{__version__}@sha256:{DIGESTS['push']}",
        f"{EXAMPLES_IMAGE}@sha256:{DIGESTS['push-cpu']}",
        f"{EXAMPLES_IMAGE}-gpu@sha256:{DIGESTS['push-gpu']}",
    ]
    tag = f"v{__version__}"
    assert calls.read_text().splitlines() == [
        f"release view {tag}",  # none yet (the stand-in says so): made, then the list attached
        f"release create {tag} --verify-tag --title {tag} --notes Images by digest: images.txt "
        "(docs/install.md, Images).",
        f"release upload {tag} images.txt --clobber",
    ]


def test_the_documented_digest_pin_runs_the_hook_by_digest(tmp_path: Path) -> None:
    text = INSTALL.read_text()
    (block,) = re.findall(r"```yaml\n(# in your overlay's kustomization\.yaml.*?)```", text, re.S)
    digest = f"sha256:{'4' * 64}"
    overlay = tmp_path / "my-install"
    overlay.mkdir()
    (tmp_path / "manifests").symlink_to(REPO / "manifests")
    (overlay / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources: [../manifests/overlays/standalone]\n" + re.sub(r"sha256:<[^>]+>", digest, block)
    )
    deployments = [d for d in documents(overlay) if d["kind"] == "Deployment"]
    images = {c["image"] for d in deployments for c in d["spec"]["template"]["spec"]["containers"]}
    assert images == {f"{IMAGE}@{digest}"}
