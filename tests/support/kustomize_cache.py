"""What `kubectl kustomize` printed for an overlay (its YAML, its warnings) and the objects it
built, kept on disk between runs and between pytest-xdist workers, under a key of everything the
build reads.

The key is a SHA-256 of the kubectl binary (path, size, modification time), the build's
arguments, and every file (path and bytes) under `ROOTS`, the only folders the project's
kustomizations refer to (`outside_references` finds any that refers elsewhere; a test keeps it
empty). Any change to a manifest, a component or kubectl is a new key, so an entry is never
stale; entries of old keys are left for `pytest --cache-clear` to remove.

The folder is pytest's cache (`.pytest_cache/d/kustomize`), set by tests/conftest.py; without
pytest's cache (`-p no:cacheprovider`) every build runs.
"""

import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.support import REPO, yamls

# Every folder a kustomization under them refers to is one of them, or in one of them.
ROOTS = (REPO / "manifests", REPO / "metacontroller")
# The kustomization fields that name files or folders the build reads.
_PATH_FIELDS: tuple[str, ...] = ("resources", "components", "bases", "crds", "transformers")
_PATH_FIELDS += ("generators", "validators", "patchesStrategicMerge")

folder: Path | None = None  # set by tests/conftest.py to pytest's cache folder


def inputs_digest(roots: tuple[Path, ...], kubectl: str) -> str:
    """A digest of `kubectl` (path, size, modification time) and every file under `roots`."""
    stat = os.stat(kubectl)
    digest = hashlib.sha256(f"{kubectl}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            digest.update(f"{path.relative_to(root.parent)}\0{path.stat().st_size}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def cached(key: str, build: Callable[[], str], suffix: str = ".yaml") -> str:
    """`build()`'s text, read from the cache folder under `key` if there, else built and
    written there (atomically: two workers building the same key both write whole files)."""
    if folder is None:
        return build()
    path = folder / f"{hashlib.sha256(key.encode()).hexdigest()}{suffix}"
    if path.is_file():
        return path.read_text()
    text = build()
    with tempfile.NamedTemporaryFile("w", dir=folder, suffix=".part", delete=False) as part:
        part.write(text)
    os.replace(part.name, path)
    return text


def outside_references(roots: tuple[Path, ...]) -> list[str]:
    """Each local file or folder a kustomization under `roots` names that is not under one of
    `roots` (the cache's key would not see it change), as `kustomization: reference`."""
    found = []
    for root in roots:
        for kustomization in sorted(root.rglob("kustomization.yaml")):
            for reference in _references(yamls.load(kustomization.read_text()) or {}):
                target = (kustomization.parent / reference).resolve()
                if not any(target.is_relative_to(r.resolve()) for r in roots):
                    found.append(f"{kustomization.relative_to(root.parent)}: {reference}")
    return found


def _references(kustomization: dict[str, Any]) -> Iterator[str]:
    for field in _PATH_FIELDS:
        for entry in kustomization.get(field) or []:
            if isinstance(entry, str) and "://" not in entry and not entry.startswith("github.com"):
                yield entry
    for entry in (kustomization.get("patches") or []) + (kustomization.get("replacements") or []):
        if isinstance(entry, dict) and "path" in entry:
            yield entry["path"]
    for generator in (kustomization.get("configMapGenerator") or []) + (
        kustomization.get("secretGenerator") or []
    ):
        for entry in (generator.get("files") or []) + (generator.get("envs") or []):
            yield entry.split("=", 1)[-1]
