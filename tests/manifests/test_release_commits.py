"""What 0.1.0 and 0.2.0 are, as README.md, CHANGELOG.md and docs/install.md say: versions whose
dated sections the changelog holds, never tagged, each the code of one commit of the history,
the last on the first-parent line of HEAD with that `app.__version__` and `[Unreleased]` empty
(the release rule of scripts/release_check.py), its version brought in by the commits named."""

import re
import subprocess

import pytest

from scripts.release_check import problems
from tests.support import REPO

# Each version: the commit whose code it is, and those where app.__version__ became it.
VERSIONS = {
    "0.1.0": ("3f1d910", ("ed071e8", "2ff879c")),
    "0.2.0": ("2e04a9b", ("2fd0dd7",)),
}
VERSION_LINE = re.compile(r'^__version__ = "(.*)"$', re.M)


def git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    if done.returncode != 0:
        pytest.fail(f"git {' '.join(args)}: {done.stderr.strip()} (these tests need the "
                    "repository's history, not a shallow clone)", pytrace=False)  # fmt: skip
    return done.stdout


def version_at(commit: str) -> str | None:
    listed = git("ls-tree", "--name-only", commit, "app/")
    if "app/__init__.py" not in listed.split():
        return None
    found = VERSION_LINE.search(git("show", f"{commit}:app/__init__.py"))
    return found.group(1) if found else None


def is_that_versions_code(commit: str, version: str) -> bool:
    return version_at(commit) == version and not problems(
        git("show", f"{commit}:CHANGELOG.md"), version
    )


def first_parent_line() -> list[str]:
    return git("rev-list", "--first-parent", "HEAD").split()


@pytest.mark.parametrize("version", list(VERSIONS))
def test_the_commit_named_is_the_last_of_that_versions_code(version: str) -> None:
    commit = git("rev-parse", "--verify", f"{VERSIONS[version][0]}^{{commit}}").strip()
    line = first_parent_line()
    assert commit in line, "on the first-parent line of HEAD"
    assert is_that_versions_code(commit, version)
    newer = line[line.index(commit) - 1]
    assert not is_that_versions_code(newer, version)


@pytest.mark.parametrize("version", list(VERSIONS))
def test_the_version_came_in_at_the_commits_named(version: str) -> None:
    for commit in VERSIONS[version][1]:
        parent = git("rev-parse", f"{commit}^1").strip()
        assert version_at(commit) == version != version_at(parent), commit


@pytest.mark.parametrize("version", list(VERSIONS))
def test_no_tag_names_it(version: str) -> None:
    assert git("tag", "--list", f"v{version}") == ""


def changelog_section(version: str) -> str:
    text = (REPO / "CHANGELOG.md").read_text()
    return text.split(f"## [{version}] - ", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("version", list(VERSIONS))
def test_its_changelog_section_says_what_it_is(version: str) -> None:
    code, came_in = VERSIONS[version]
    opening = " ".join(changelog_section(version).split("\n### ", 1)[0].split())
    assert "Never tagged, and its images never published" in opening
    assert f"this section is the code of commit {code}," in opening
    named = set(re.findall(r"\b[0-9a-f]{7,40}\b", opening))
    assert named == {code, *came_in}


def test_readme_and_install_name_the_same_commits() -> None:
    readme = " ".join((REPO / "README.md").read_text().split())
    codes = [VERSIONS[v][0] for v in VERSIONS]
    assert (
        "No earlier version was tagged or published either: 0.1.0 and 0.2.0 are, in the "
        f"changelog, the code of commits {codes[0]} and {codes[1]}." in readme
    )
    install = " ".join((REPO / "docs" / "install.md").read_text().split())
    assert (
        "0.2.0 was never tagged and its image never published: CHANGELOG.md's 0.2.0 is the code "
        f"of commit {VERSIONS['0.2.0'][0]}," in install
    )


def test_the_upgrade_test_installs_the_commit_named() -> None:
    text = (REPO / "tests" / "apiserver" / "test_upgrade.py").read_text()
    (commit,) = re.findall(r'^RELEASE_COMMIT = "([0-9a-f]{40})"$', text, re.M)
    assert commit.startswith(VERSIONS["0.2.0"][0])
