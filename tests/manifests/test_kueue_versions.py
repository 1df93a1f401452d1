"""The Kueue releases the pages call tested are those the Kueue tier runs: scripts/kueue-binary.sh's
default (`make test`) and the Makefile's `test-kueue-0.17`. docs/kueue.md opens with what a user
needs; how the tests obtain Kueue is in docs/apiserver-tests.md."""

import re

import pytest

from tests.support import REPO


def releases_run() -> dict[str, str]:
    """The release each make target runs the Kueue tier against."""
    script = (REPO / "scripts" / "kueue-binary.sh").read_text()
    (default,) = re.findall(r"^KUEUE_VERSION=\$\{KUEUE_VERSION:-(v[\d.]+)\}$", script, re.M)
    makefile = (REPO / "Makefile").read_text()
    target = makefile.split("\ntest-kueue-0.17:", 1)[1].split("\n\n", 1)[0]
    (older,) = re.findall(r"KUEUE_VERSION=(v[\d.]+) ", target)
    return {"make test": default, "make test-kueue-0.17": older}


def one_line(page: str) -> str:
    return " ".join((REPO / page).read_text().split())


@pytest.mark.parametrize(
    ("page", "claim"),
    [
        ("README.md", r"with Kueue (v[\d.]+) and (v[\d.]+) \(tested\)"),
        ("docs/migrating-from-training-operator.md", r"with Kueue (v[\d.]+) or (v[\d.]+) \(tested"),
        ("docs/kueue.md", r"Tested with \*\*Kueue (v[\d.]+)\*\* and \*\*(v[\d.]+)\*\*"),
        ("docs/install.md", r"queued \(tested with Kueue (v[\d.]+) and (v[\d.]+);"),
    ],
)
def test_the_page_calls_tested_the_releases_the_tier_runs(page: str, claim: str) -> None:
    (found,) = re.findall(claim, one_line(page))
    assert set(found) == set(releases_run().values())


def test_the_tiers_page_says_which_target_runs_which() -> None:
    releases = releases_run()
    row = (
        f"| Kueue | {releases['make test']} (`make test`), "
        f"{releases['make test-kueue-0.17']} (`make test-kueue-0.17`) |"
    )
    assert row in one_line("docs/apiserver-tests.md")


def test_the_kueue_page_opens_without_the_tests_tooling() -> None:
    opening = one_line("docs/kueue.md").split("## Install", 1)[0]
    assert [word for word in ("go list", "module proxy", "kueue-binary") if word in opening] == []
    assert "`go list -versions`" in one_line("docs/apiserver-tests.md")
