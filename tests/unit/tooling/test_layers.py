"""The import-linter contracts in pyproject.toml hold the core's stages in their order: in a copy
of app/, an import from a lower stage of a higher one fails `lint-imports`, and the copy as it
is passes, so the failure is the planted import's."""

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support import REPO

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
# Each plants, at the end of a module, an import that reaches a stage above its own.
UPWARD = [
    pytest.param("app/core/model/values.py", "app.core.reconcile", id="model-reads-reconcile"),
    pytest.param("app/core/observe/pods.py", "app.core.decide.decision", id="observe-reads-decide"),
    pytest.param(
        "app/core/mxnet/names.py", "app.core.validate.sizerule", id="mxnet-reads-validate"
    ),
    pytest.param(
        "app/core/children/desired.py", "app.integrations.events", id="core-reads-a-guest"
    ),
]


def lint(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=tree, capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of app/ and its contracts, which the copy as it is keeps."""
    root = tmp_path_factory.mktemp("house")
    shutil.copytree(REPO / "app", root / "app", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    kept = lint(root)
    assert kept.returncode == 0, kept.stdout
    return root


@pytest.mark.parametrize(("module", "upward"), UPWARD)
def test_an_upward_import_breaks_a_contract(tree: Path, module: str, upward: str) -> None:
    path = tree / module
    before = path.read_text()
    path.write_text(f"{before}\nimport {upward}  # noqa: E402\n")
    try:
        broken = lint(tree)
    finally:
        path.write_text(before)
    assert broken.returncode != 0
    assert "BROKEN" in broken.stdout


def test_no_contract_lets_an_import_into_or_out_of_the_core_through() -> None:
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    ignored = [i for c in contracts["contracts"] for i in c.get("ignore_imports", [])]
    assert [i for i in ignored if "app.core" in i] == []
