"""A release lists every image it pushes by digest (images.txt on its GitHub release) and signs
each image and the list: the workflow's own steps run with a stand-in for the push, for `cosign`
and for `gh`; and docs/install.md's kustomize block pins the hook by that digest."""

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
    """The job's steps that take a push's digest (its signing and its recording), in order."""
    steps = jobs()[job]["steps"]
    pushes = [s["id"] for s in steps if s.get("with", {}).get("push") is True]
    assert pushes, f"{job} pushes no image with an id"
    recorders = [s for s in steps if EXPRESSION.search(str(s.get("env", {})))]
    assert {m for s in recorders for m in EXPRESSION.findall(str(s["env"]))} == set(pushes)
    return recorders


# Stand-ins that record their arguments: `gh` (finding no release), and `cosign`, whose
# `sign-blob` writes the file `--bundle` names.
FAKES = {
    "gh": '#!/bin/sh\necho "$*" >>{calls}/gh\n[ "$2" != view ]\n',
    "cosign": '#!/bin/bash\necho "$*" >>{calls}/cosign\n'
    'while [ $# -gt 0 ]; do [ "$1" = --bundle ] && echo {{}} >"$2"; shift; done\n',
}


def stand_ins(tmp_path: Path) -> dict[str, str]:
    """The release jobs' environment, with the stand-ins first on PATH."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    for command, script in FAKES.items():
        (fake_bin / command).write_text(script.format(calls=tmp_path))
        (fake_bin / command).chmod(0o755)
    name, mxnet = EXAMPLES_IMAGE.rsplit(":", 1)
    return {
        "IMAGE": IMAGE, "VERSION": __version__, "EXAMPLES_IMAGE": name, "MXNET": mxnet,
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"), "GITHUB_REF_NAME": f"v{__version__}",
        "PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}",
    }  # fmt: skip


def test_every_pushed_image_is_listed_by_digest_on_the_release(tmp_path: Path) -> None:
    env = stand_ins(tmp_path)
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
    download = release["steps"][0]
    assert download["with"] == {"pattern": "digests-*", "merge-multiple": True}
    for step in (s for s in release["steps"] if "run" in s):
        run(step, tmp_path, env)
    assert (tmp_path / "images.txt").read_text().splitlines() == [
        f"{IMAGE}:{__version__}@sha256:{DIGESTS['push']}",
        f"{EXAMPLES_IMAGE}@sha256:{DIGESTS['push-cpu']}",
        f"{EXAMPLES_IMAGE}-gpu@sha256:{DIGESTS['push-gpu']}",
    ]
    tag = f"v{__version__}"
    assert (tmp_path / "gh").read_text().splitlines() == [
        f"release view {tag}",  # none yet (the stand-in says so): made, then the list attached
        f"release create {tag} --verify-tag --title {tag} --notes Images by digest: images.txt, "
        "signed (docs/install.md, Images).",
        f"release upload {tag} images.txt images.txt.sigstore.json --clobber",
    ]
    # Each image signed by the digest its push gave, then the list (keyless: no key named).
    assert (tmp_path / "cosign").read_text().splitlines() == [
        f"sign --yes {IMAGE}@sha256:{DIGESTS['push']}",
        f"sign --yes {env['EXAMPLES_IMAGE']}@sha256:{DIGESTS['push-cpu']}",
        f"sign --yes {env['EXAMPLES_IMAGE']}@sha256:{DIGESTS['push-gpu']}",
        "sign-blob --yes --new-bundle-format --bundle images.txt.sigstore.json images.txt",
    ]
    assert (tmp_path / "images.txt.sigstore.json").exists()


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
