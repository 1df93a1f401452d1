"""The with-metacontroller overlay builds with no network: Metacontroller's release manifests are
kept in the repository, the pinned tag's files byte for byte, as their SOURCE.md records."""

import hashlib
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support import REPO, yamls
from tests.support.kustomize import (
    OVERLAYS,
    RELEASE_COPY,
    MissingMetacontrollerSource,
    kubectl,
    metacontroller_manifests,
)

SOURCE_MD = RELEASE_COPY / "SOURCE.md"
BINARY_SCRIPT = REPO / "scripts" / "metacontroller-binary.sh"


def checksums(folder: Path) -> dict[str, str]:
    """The sha256 of each of `folder`'s files but SOURCE.md."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in folder.iterdir()
        if path.is_file() and path.name != "SOURCE.md"
    }


def test_source_md_records_every_kept_file_and_its_checksum() -> None:
    recorded = dict(
        re.findall(r"^\| `([^`]+)` \| `([0-9a-f]{64})` \|$", SOURCE_MD.read_text(), re.M)
    )
    assert recorded == checksums(RELEASE_COPY)


def test_source_md_names_the_tag_and_commit_the_binary_is_built_from() -> None:
    script = BINARY_SCRIPT.read_text()
    version = re.search(r"^METACONTROLLER_VERSION=(\S+)$", script, re.M)
    commit = re.search(r"^METACONTROLLER_COMMIT=([0-9a-f]{40})\b", script, re.M)
    assert version, "scripts/metacontroller-binary.sh pins no tag"
    assert commit, "scripts/metacontroller-binary.sh pins no commit"
    text = " ".join(SOURCE_MD.read_text().split())
    assert f"tag `{version.group(1)}` (commit `{commit.group(1)}`)" in text


def test_the_kept_manifests_are_the_tags_files() -> None:
    """Compared with the release in Metacontroller's source copy; without one, fails naming
    METACONTROLLER_SRC (never skips)."""
    try:
        tags = metacontroller_manifests()
    except MissingMetacontrollerSource as missing:
        pytest.fail(str(missing), pytrace=False)
    assert checksums(RELEASE_COPY) == checksums(tags)


def no_network(command: list[str]) -> list[str]:
    """`command` in a network namespace of its own, which has no route: as root, or as a user
    mapped to root where the kernel allows user namespaces."""
    own = ["--net"] if os.geteuid() == 0 else ["--map-root-user", "--net"]
    routeless = 'test "$(wc -l < /proc/net/route)" -le 1 || exit 99; exec "$@"'
    return ["unshare", *own, "--", "sh", "-c", routeless, "no-network", *command]


def test_the_overlay_builds_with_no_network() -> None:
    done = subprocess.run(
        no_network([kubectl(), "kustomize", str(OVERLAYS / "with-metacontroller")]),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode != 99, "the network namespace has a route"
    assert done.returncode == 0, done.stderr
    built = {(d["kind"], d["metadata"]["name"]) for d in yamls.load_all(done.stdout)}
    assert {
        ("StatefulSet", "metacontroller"),
        ("CustomResourceDefinition", "compositecontrollers.metacontroller.k8s.io"),
        ("Deployment", "mxjob-controller"),
        ("CompositeController", "mxjob-controller"),
    } <= built
