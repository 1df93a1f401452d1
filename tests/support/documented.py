"""What the docs show, read from the docs themselves, so that the tests check the text a user
copies rather than a copy of it."""

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.support import REPO

SECURITY = REPO / "docs" / "security.md"


def yaml_blocks(page: Path) -> list[str]:
    """The page's fenced YAML blocks, in order."""
    return re.findall(r"^```yaml\n(.*?)^```", page.read_text(), re.M | re.S)


def sync_webhook() -> dict[str, Any]:
    """The CompositeController's sync webhook as docs/security.md shows it (the only YAML
    block there with an `authorization`)."""
    (block,) = [b for b in yaml_blocks(SECURITY) if "authorization:" in b]
    webhook: dict[str, Any] = yaml.safe_load(block)["hooks"]["sync"]["webhook"]
    return webhook


def authorization() -> dict[str, Any]:
    """The webhook's `authorization` as docs/security.md shows it."""
    found: dict[str, Any] = sync_webhook()["authorization"]
    return found


def shell_block(page: Path, needle: str) -> str:
    """The one fenced `sh` block of the page (indented in a list or not) containing `needle`."""
    blocks = re.findall(r"^\s*```sh\n(.*?)^\s*```", page.read_text(), re.M | re.S)
    (found,) = [b for b in blocks if needle in b]
    return str(found)


def run_as_user(script: str, kubectl: Path, kubeconfig: Path) -> subprocess.CompletedProcess[str]:
    """A command of a page run as a user would, in the repository, `kubectl` and
    `mxjob-controller` (the virtualenv's, installed from the checkout) on PATH."""
    env = {
        **os.environ,
        "PATH": f"{kubectl.parent}:{Path(sys.executable).parent}:{os.environ['PATH']}",
        "KUBECONFIG": str(kubeconfig),
    }
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=REPO, env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
