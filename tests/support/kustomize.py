"""`kubectl kustomize` of an overlay, and Metacontroller's release manifests.

The `with-metacontroller` overlay installs Metacontroller from its release manifests, kept in
the repository (`RELEASE_COPY`), so every overlay builds as it is, with no network.
`metacontroller_manifests` is the same release in Metacontroller's source copy
(`localcluster.realstack.metacontroller_source` says where it is found), which the copy is
checked against.

`kubectl()` is the kubectl every test's `kubectl kustomize` runs: the one scripts/k8s-binaries.sh
picks for the API-server tier (the machine's of the pinned minor, or one it builds and caches).
An overlay with components is built and parsed once per session (`overlay_objects`); each caller
gets its own copy. Its build (with what kubectl printed on stderr: `build_warnings`), and its
objects as JSON, are also kept between sessions and workers (`kustomize_cache`).
"""

import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from localcluster.apiserver import ApiServer, ClusterError, obtain_kubectl
from localcluster.realstack import grant_metacontroller, metacontroller_source
from tests.support import REPO, kustomize_cache
from tests.support.yamls import load_all

OVERLAYS = REPO / "manifests" / "overlays"
# Metacontroller v4.17.2's manifests/production, byte for byte (its SOURCE.md).
RELEASE_COPY = REPO / "manifests" / "third_party" / "metacontroller"


class MissingMetacontrollerSource(FileNotFoundError):
    pass


def metacontroller_manifests() -> Path:
    """Metacontroller v4.17.2's production manifests in its source copy."""
    try:
        source = metacontroller_source()
    except ClusterError as error:  # none here and none fetched: the script says why
        raise MissingMetacontrollerSource(str(error)) from None
    for candidate in (source / "manifests" / "production", source / "manifests"):
        if (candidate / "kustomization.yaml").is_file():
            return candidate
    raise MissingMetacontrollerSource(
        f"{RELEASE_COPY.relative_to(REPO)} is checked against Metacontroller v4.17.2's source, and "
        f"{source} has no manifests/production/kustomization.yaml: set METACONTROLLER_SRC to a "
        "checkout of https://github.com/metacontroller/metacontroller at tag v4.17.2 "
        "(docs/development.md)"
    )


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


@functools.cache
def build_overlay(overlay: str, *components: str) -> str:
    """The overlay's `kubectl kustomize` output (YAML text), with `components` (names in
    manifests/components) added as a user's overlay adds them; built once per session, and
    once for all sessions while nothing it reads changes (`kustomize_cache`)."""
    return _kept_build(overlay, *components)[0]


def build_warnings(overlay: str, *components: str) -> str:
    """What `kubectl kustomize` printed on stderr (its warnings) for `build_overlay(overlay,
    *components)`, kept with the build."""
    return _kept_build(overlay, *components)[1]


@functools.cache
def _kept_build(overlay: str, *components: str) -> tuple[str, str]:
    key = json.dumps([_inputs_digest(), overlay, components, "stdout and stderr"])
    kept = kustomize_cache.cached(
        key, lambda: json.dumps(_build_overlay(overlay, *components)), suffix=".json"
    )
    stdout, stderr = json.loads(kept)
    return stdout, stderr


@functools.cache
def _inputs_digest() -> str:
    return kustomize_cache.inputs_digest(kustomize_cache.ROOTS, kubectl())


def _build_overlay(overlay: str, *components: str) -> tuple[str, str]:
    if not components:
        return built_with_warnings(OVERLAYS / overlay)
    with tempfile.TemporaryDirectory() as tmp:
        folder = with_components(Path(tmp) / "with-components", overlay, *components)
        return built_with_warnings(folder)


@functools.cache
def _objects_json(overlay: str, *components: str) -> str:
    """The objects of `build_overlay(overlay, *components)` as JSON, kept beside the build: JSON
    reads some thirty times faster than the YAML, which every worker of every run would parse."""
    key = json.dumps([_inputs_digest(), overlay, components, "objects"])
    objects = lambda: as_json(load_all(build_overlay(overlay, *components)))  # noqa: E731
    return kustomize_cache.cached(key, objects, suffix=".json")


def as_json(objects: list[Any]) -> str:
    """`objects` as JSON text that reads back as the same objects (Kubernetes objects are JSON;
    YAML could hold more, such as a key that is a number)."""
    text = json.dumps(objects)
    assert json.loads(text) == objects, "the objects do not read back the same from JSON"
    return text


def overlay_objects(overlay: str, *components: str) -> tuple[dict[str, Any], ...]:
    """The objects of `build_overlay(overlay, *components)`, built once per session; a copy of
    its own to each caller."""
    return tuple(json.loads(_objects_json(overlay, *components)))


def shipped_access(server: ApiServer, *components: str) -> Path:
    """Metacontroller's ClusterRole and binding as the with-metacontroller overlay ships them
    with `components` added, applied to `server`; the kubeconfig of the ServiceAccount they
    bind, for `run_metacontroller`."""
    return grant_metacontroller(server, overlay_objects("with-metacontroller", *components))


def built(folder: Path) -> str:
    """`kubectl kustomize` of `folder` (YAML text); a failure shows kubectl's error."""
    return built_with_warnings(folder)[0]


def built_with_warnings(folder: Path) -> tuple[str, str]:
    """`kubectl kustomize` of `folder`: its YAML text and what it printed on stderr (warnings);
    a failure shows kubectl's error."""
    result = subprocess.run(
        [kubectl(), "kustomize", str(folder)],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout, result.stderr


def documents(folder: Path) -> list[dict[str, Any]]:
    """The objects `kubectl kustomize` of `folder` prints."""
    return load_all(built(folder))


def kept_documents(folder: Path) -> list[dict[str, Any]]:
    """`documents(folder)` for a folder whose kustomization refers only to its own files and to
    manifests/ and metacontroller/ (a link to them included): its build is kept
    (`kustomize_cache`) under a key of the bytes of the folder's files and of everything the
    overlays read, so the same text built by another test, worker or run is read again."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    texts = [(str(p.relative_to(folder)), p.read_text()) for p in files]
    key = json.dumps([_inputs_digest(), "folder", folder.name, texts])
    return load_all(kustomize_cache.cached(key, lambda: built(folder)))


def is_metacontroller(document: dict[str, Any]) -> bool:
    """One of Metacontroller's own objects (its release labels every one of them)."""
    labels = document.get("metadata", {}).get("labels") or {}
    return bool(labels.get("app.kubernetes.io/name") == "metacontroller")


def hook_objects(overlay: str) -> tuple[dict[str, Any], ...]:
    """The overlay's objects but Metacontroller's own: what this project installs."""
    return tuple(d for d in overlay_objects(overlay) if not is_metacontroller(d))
