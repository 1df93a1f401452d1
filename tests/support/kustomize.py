"""`kubectl kustomize` of an overlay, with Metacontroller's release manifests from the local copy.

The `with-metacontroller` overlay installs Metacontroller from its release manifests, pinned by
tag on GitHub. Tests have no network: `build_overlay` builds a copy of the overlay whose remote
base is replaced by the same release's manifests in Metacontroller's source copy
(`localcluster.realstack.metacontroller_source` says where it is found), with the real
kubectl's kustomize. Everything else in the overlay is built as it is.

`kubectl()` is the kubectl every test's `kubectl kustomize` runs: the one scripts/k8s-binaries.sh
picks for the API-server tier (the machine's of the pinned minor, or one it builds and caches).
"""

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.apiserver import ApiServer, ClusterError, obtain_kubectl
from localcluster.realstack import grant_metacontroller, metacontroller_source
from tests.support import REPO

OVERLAYS = REPO / "manifests" / "overlays"
METACONTROLLER_RELEASE = (
    "https://github.com/metacontroller/metacontroller//manifests/production?ref=v4.17.2"
)


class MissingMetacontrollerSource(FileNotFoundError):
    pass


def metacontroller_manifests() -> Path:
    """The local copy of Metacontroller v4.17.2's production manifests."""
    try:
        source = metacontroller_source()
    except ClusterError as error:  # none here and none fetched: the script says why
        raise MissingMetacontrollerSource(str(error)) from None
    for candidate in (source / "manifests" / "production", source / "manifests"):
        if (candidate / "kustomization.yaml").is_file():
            return candidate
    raise MissingMetacontrollerSource(
        f"the with-metacontroller overlay is built from Metacontroller v4.17.2's source, and "
        f"{source} has no manifests/production/kustomization.yaml: set METACONTROLLER_SRC to a "
        "checkout of https://github.com/metacontroller/metacontroller at tag v4.17.2 "
        "(README.md, Two commands)"
    )


def needs_metacontroller_source(overlay: str) -> bool:
    """The overlay's build reads Metacontroller's manifests (its remote base)."""
    kustomization = yaml.safe_load((OVERLAYS / overlay / "kustomization.yaml").read_text())
    return METACONTROLLER_RELEASE in (kustomization.get("resources") or [])


@functools.cache
def kubectl() -> str:
    """The kubectl scripts/k8s-binaries.sh picks (the machine's of the pinned minor, else built
    once and cached, as for the API-server tier), found once per session."""
    live = lambda line: print(line, file=sys.__stderr__, flush=True)  # noqa: E731 (a cold build)
    return str(obtain_kubectl(live))


def with_components(folder: Path, overlay: str | Path, *components: str) -> Path:
    """A throwaway overlay in `folder` (created): `overlay` (a name in manifests/overlays, or a
    folder) with `components` added."""
    folder.mkdir()

    def relative(path: Path) -> str:  # no absolute bases
        return os.path.relpath(path, folder)

    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [relative(OVERLAYS / overlay)],
        "components": [relative(REPO / "manifests" / "components" / c) for c in components],
    }
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return folder


def build_overlay(overlay: str, *components: str) -> str:
    """The overlay's `kubectl kustomize` output (YAML text), with `components` (names in
    manifests/components) added as a user's overlay adds them."""
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
                if (source / entry).is_file():  # a file of the overlay's own, copied with it
                    return entry
                found = metacontroller_manifests() if entry == METACONTROLLER_RELEASE else None
                return os.path.relpath(found or (source / entry).resolve(), local)

            kustomization["resources"] = [relative(r) for r in resources]
            kustomization["components"] = [
                relative(c) for c in kustomization.get("components") or []
            ]
            (local / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
            source = local
        if components:
            source = with_components(Path(tmp) / "with-components", source, *components)
        return built(source)


@functools.cache
def overlay_objects(overlay: str, *components: str) -> tuple[dict[str, Any], ...]:
    """The objects of `build_overlay(overlay, *components)`, built once per session (do not
    change them)."""
    return tuple(d for d in yaml.safe_load_all(build_overlay(overlay, *components)) if d)


def shipped_access(server: ApiServer, *components: str) -> Path:
    """Metacontroller's ClusterRole and binding as the with-metacontroller overlay ships them
    with `components` added, applied to `server`; the kubeconfig of the ServiceAccount they
    bind, for `run_metacontroller`."""
    return grant_metacontroller(server, overlay_objects("with-metacontroller", *components))


def built(folder: Path) -> str:
    """`kubectl kustomize` of `folder` (YAML text); a failure shows kubectl's error."""
    result = subprocess.run(
        [kubectl(), "kustomize", str(folder)],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def documents(folder: Path) -> list[dict[str, Any]]:
    """The objects `kubectl kustomize` of `folder` prints."""
    return [d for d in yaml.safe_load_all(built(folder)) if d]


def is_metacontroller(document: dict[str, Any]) -> bool:
    """One of Metacontroller's own objects (its release labels every one of them)."""
    labels = document.get("metadata", {}).get("labels") or {}
    return bool(labels.get("app.kubernetes.io/name") == "metacontroller")


def hook_objects(overlay: str) -> tuple[dict[str, Any], ...]:
    """The overlay's objects but Metacontroller's own: what this project installs. Without
    Metacontroller's source, the test fails with the one message that says where to put it."""
    try:
        text = build_overlay(overlay)
    except MissingMetacontrollerSource as missing:
        message = str(missing)
    else:
        documents = (d for d in yaml.safe_load_all(text) if d)
        return tuple(d for d in documents if not is_metacontroller(d))
    pytest.fail(message, pytrace=False)
