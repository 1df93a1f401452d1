"""The Go tools built by scripts/go-tools.sh (helm, promtool, actionlint, kube-controllers, the
monitoring CRDs): built once, cached outside the tree, paths parsed from the script's output."""

from collections.abc import Callable
from pathlib import Path

from localcluster import buildscript
from tests.support import REPO

SCRIPT = REPO / "scripts" / "go-tools.sh"


class GoToolError(RuntimeError):
    pass


def obtain(tools: list[str], progress: Callable[[str], None]) -> dict[str, Path]:
    """Run the script for `tools`; its progress lines go to `progress` as they come."""
    try:
        return buildscript.run(SCRIPT, tools, progress)
    except buildscript.BuildScriptError as error:
        raise GoToolError(str(error)) from None
