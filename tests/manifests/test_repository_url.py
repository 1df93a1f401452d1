"""One URL for the repository, the GitHub repository of the owner the images' names use
(`ghcr.io/<owner>/...`): every URL of it in the project's files is that one, and the package
metadata, the chart and the pages' clone steps give it."""

import re
import subprocess
import tomllib
from pathlib import Path

import yaml

from tests.support import REPO
from tests.support.overlays import IMAGE

URL = "https://github.com/mxjob-controller/mxjob-controller"
# Any address of a repository of that owner or of that name, on GitHub or its pages.
ANY_URL = re.compile(
    r"(?:(?:https?|git)://|git@)?(?:www\.)?github\.com[:/](?:mxjob-controller/[\w.-]*|[\w.-]+/mxjob-controller\b)[\w./#-]*"
    r"|[\w.-]*mxjob-controller\.github\.io[\w./-]*"
)
PLACEHOLDER = re.compile(r"<(this|the) repository'?s? URL>", re.I)


def project_files() -> list[Path]:
    """The checkout's files, tracked or not, but those git ignores."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    return [REPO / name for name in listed.split("\0") if name and (REPO / name).is_file()]


def texts() -> dict[str, str]:
    found = {}
    for path in project_files():
        try:
            found[str(path.relative_to(REPO))] = path.read_text()
        except UnicodeDecodeError:  # not text
            continue
    return found


def test_the_url_is_the_owner_of_the_images() -> None:
    owner = IMAGE.removeprefix("ghcr.io/").split("/")[0]
    assert f"https://github.com/{owner}/mxjob-controller" == URL


def test_every_url_of_the_repository_is_the_one() -> None:
    found = {
        (name, url.rstrip("."))  # a sentence's full stop is not the URL's
        for name, text in texts().items()
        if "github" in text  # in every match: the slow search runs on a sixth of the bytes
        for url in ANY_URL.findall(text)
    }
    assert found
    assert {(name, url) for name, url in found if url != URL} == set()


def test_no_page_stands_in_for_the_url() -> None:
    own = str(Path(__file__).relative_to(REPO))
    assert [
        name for name, text in texts().items() if PLACEHOLDER.search(text) and name != own
    ] == []


def test_the_package_metadata_and_the_chart_name_it() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert set(project["urls"].values()) == {URL}
    chart = yaml.safe_load((REPO / "charts" / "mxjob-controller" / "Chart.yaml").read_text())
    assert (chart["home"], chart["sources"]) == (URL, [URL])


def test_the_clone_steps_clone_it() -> None:
    for page in ("README.md", "docs/migrating-from-training-operator.md"):
        assert f"git clone {URL}" in (REPO / page).read_text(), page
