"""The release rule: entries under [Unreleased] come with a version not yet released, a tag
only on its dated section; scripts/release_check.py holds it and the release workflow runs it."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from app import __version__
from scripts.release_check import as_tuple, unreleased
from tests.support import REPO

WORKFLOW = REPO / ".github" / "workflows" / "ci.yaml"


def test_changelog_has_the_version_first() -> None:
    """The newest dated section is app.__version__, or, with entries under [Unreleased], the
    release before it."""
    text = (REPO / "CHANGELOG.md").read_text()
    released = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", text, re.M)
    newest, version = as_tuple(released[0]), as_tuple(__version__)
    assert newest < version if unreleased(text) else newest == version


def test_changelog_and_version_follow_the_release_rule() -> None:
    """CHANGELOG.md's header: entries under [Unreleased] come with a version not yet released."""
    done = subprocess.run(
        [sys.executable, "-m", "scripts.release_check"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "")


HEADER = "# Changelog\n\n## [Unreleased]\n"
RELEASED = "\n## [0.2.0] - 2026-11-23\n\n### Added\n- b\n\n## [0.1.0] - 2026-01-01\n\n- a\n"
# What the release check answers: a changelog, app.__version__, the tag pushed (if any), and
# the errors it prints, in order.
RELEASE_CHECK_CASES = [
    pytest.param(HEADER + RELEASED, "0.2.0", None, [], id="released"),
    pytest.param(HEADER + RELEASED, "0.2.0", "v0.2.0", [], id="released-tagged"),
    pytest.param(HEADER + "\n### Fixed\n- c\n" + RELEASED, "0.2.1", None, [], id="bumped"),
    pytest.param(
        HEADER + "\n### Fixed\n- c\n" + RELEASED,
        "0.2.0",
        None,
        [
            "entries under [Unreleased] but app.__version__ is 0.2.0, not newer than the "
            "newest dated section 0.2.0: bump it past 0.2.0"
        ],
        id="unreleased-code-as-a-released-version",
    ),
    pytest.param(
        HEADER + "\n### Fixed\n- c\n" + RELEASED,
        "0.2.1",
        "v0.2.1",
        [
            "entries under [Unreleased]: make them the section ## [0.2.1] - <date> before "
            "tagging v0.2.1",
            "newest dated section is 0.2.0, not app.__version__ 0.2.1",
        ],
        id="tag-with-unreleased-entries",
    ),
    pytest.param(
        HEADER + RELEASED,
        "0.3.0",
        "v0.3.0",
        ["newest dated section is 0.2.0, not app.__version__ 0.3.0"],
        id="tag-without-its-section",
    ),
    pytest.param(
        HEADER + RELEASED,
        "0.2.0",
        "v0.1.0",
        ["tag v0.1.0 is not v0.2.0 (app.__version__)"],
        id="tag-of-another-version",
    ),
    pytest.param(
        "# Changelog\n" + RELEASED.replace("0.2.0] - 2026-11-23", "0.2.0]"),
        "0.2.0",
        "v0.2.0",
        ["newest dated section is 0.1.0, not app.__version__ 0.2.0"],
        id="section-without-a-date",
    ),
]


@pytest.mark.parametrize(("changelog", "version", "tag", "wanted"), RELEASE_CHECK_CASES)
def test_release_check_refuses_what_the_rule_forbids(
    tmp_path: Path, changelog: str, version: str, tag: str | None, wanted: list[str]
) -> None:
    """scripts/release_check.py, as the release workflow runs it, on planted changelogs."""
    (tmp_path / "CHANGELOG.md").write_text(changelog)
    args = ["--changelog", str(tmp_path / "CHANGELOG.md"), "--version", version]
    done = subprocess.run(
        [sys.executable, "-m", "scripts.release_check", *args, *(["--tag", tag] if tag else [])],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert done.returncode == (1 if wanted else 0)
    assert len(lines) == len(wanted)
    for line, part in zip(lines, wanted, strict=True):
        assert line.startswith("error: ")
        assert part in line


def test_release_workflow_runs_the_release_check() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    steps = workflow["jobs"]["image"]["steps"]
    runs = [s.get("run", "") for s in steps]
    check = next(i for i, r in enumerate(runs) if "scripts.release_check" in r)
    push = next(i for i, s in enumerate(steps) if s.get("with", {}).get("push") is True)
    assert 'python -m scripts.release_check --tag "$GITHUB_REF_NAME"\n' in runs[check]
    assert check < push
