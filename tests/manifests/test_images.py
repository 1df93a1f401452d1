"""docs/install.md's table of images lists every image that the overlays, the components and the
chart's default render run, and nothing else: the list an air-gapped cluster mirrors."""

import re
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import REPO
from tests.support.kustomize import overlay_objects
from tests.support.overlays import LAYOUT

INSTALL = REPO / "docs" / "install.md"
CHART = REPO / "charts" / "mxjob-controller"
COMPONENTS = sorted(p.name for p in (REPO / "manifests" / "components").iterdir())


def documented() -> set[str]:
    """The first column of the table under docs/install.md's "Images"."""
    section = INSTALL.read_text().split("\n## Images\n")[1].split("\n## ")[0]
    return set(re.findall(r"^\| `([^`]+)` \|", section, re.M))


def images(objects: Iterable[dict[str, Any]]) -> set[str]:
    """Every container's and init container's image in the objects' pod templates."""
    found = set()
    for obj in objects:
        template = obj.get("spec", {}).get("template", {}).get("spec", {})
        for container in template.get("containers", []) + template.get("initContainers", []):
            found.add(container["image"])
    return found


def test_the_kustomize_builds_run_exactly_the_documented_images() -> None:
    builds = [overlay_objects(overlay) for overlay in LAYOUT]
    builds += [overlay_objects("standalone", c) for c in COMPONENTS]
    assert set().union(*(images(b) for b in builds)) == documented()


@pytest.mark.slow
def test_the_charts_default_render_runs_documented_images(
    go_tool: Callable[[str], Path],
) -> None:
    done = subprocess.run(
        [str(go_tool("helm")), "template", "mxjob-controller", str(CHART)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rendered = images(d for d in yaml.safe_load_all(done.stdout) if d)
    assert rendered
    assert rendered <= documented()
