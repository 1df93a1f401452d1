"""`kubectl kustomize` of an overlay, with Metacontroller's release manifests from the local copy.

The `with-metacontroller` overlay installs Metacontroller from its release manifests, pinned by
tag on GitHub. Tests have no network: `build_overlay` builds a copy of the overlay whose remote
base is replaced by the same release's manifests in Metacontroller's source copy
(../shared/third_party/metacontroller/manifests, or `$METACONTROLLER_SRC/manifests`), with the
real kubectl's kustomize. Everything else in the overlay is built as it is.
"""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
OVERLAYS = REPO / "manifests" / "overlays"
METACONTROLLER_RELEASE = (
    "https://github.com/metacontroller/metacontroller//manifests/production?ref=v4.17.2"
)
DEFAULT_SOURCE = REPO.parent / "shared" / "third_party" / "metacontroller"


def metacontroller_manifests() -> Path:
    """The local copy of Metacontroller v4.17.2's production manifests."""
    source = Path(os.environ.get("METACONTROLLER_SRC", DEFAULT_SOURCE))
    for candidate in (source / "manifests" / "production", source / "manifests"):
        if (candidate / "kustomization.yaml").is_file():
            return candidate
    raise FileNotFoundError(f"no Metacontroller manifests (kustomization.yaml) under {source}")


def with_components(folder: Path, overlay: str, *components: str) -> Path:
    """A throwaway overlay in `folder` (created): `overlay` with `components` added."""
    folder.mkdir()
    relative = lambda path: os.path.relpath(path, folder)  # noqa: E731 (no absolute bases)
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [relative(OVERLAYS / overlay)],
        "components": [relative(REPO / "manifests" / "components" / c) for c in components],
    }
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return folder


def build_overlay(overlay: str) -> str:
    """The overlay's `kubectl kustomize` output (YAML text)."""
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl (with its built-in kustomize) must be on PATH"
    source = OVERLAYS / overlay
    kustomization = yaml.safe_load((source / "kustomization.yaml").read_text())
    resources = kustomization.get("resources") or []
    remote = [r for r in resources if "://" in r]
    with tempfile.TemporaryDirectory() as tmp:
        if remote:
            assert remote == [METACONTROLLER_RELEASE], f"{overlay}: unexpected remote {remote}"
            local = Path(tmp) / overlay
            shutil.copytree(source, local)

            # kustomize takes no absolute path as a base: every one relative to the copy.
            def relative(entry: str) -> str:
                found = metacontroller_manifests() if entry == METACONTROLLER_RELEASE else None
                return os.path.relpath(found or (source / entry).resolve(), local)

            kustomization["resources"] = [relative(r) for r in resources]
            kustomization["components"] = [
                relative(c) for c in kustomization.get("components") or []
            ]
            (local / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
            source = local
        result = subprocess.run(
            [kubectl, "kustomize", str(source)],
            capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def is_metacontroller(document: dict[str, Any]) -> bool:
    """One of Metacontroller's own objects (its release labels every one of them)."""
    labels = document.get("metadata", {}).get("labels") or {}
    return bool(labels.get("app.kubernetes.io/name") == "metacontroller")


def hook_objects(overlay: str) -> tuple[dict[str, Any], ...]:
    """The overlay's objects but Metacontroller's own: what this project installs."""
    documents = (d for d in yaml.safe_load_all(build_overlay(overlay)) if d)
    return tuple(d for d in documents if not is_metacontroller(d))
