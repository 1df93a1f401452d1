"""Statements of the docs about other projects, as their sources at the pinned tags have it,
read from the docs themselves: what each must say, and the wrong version it replaced."""

import re

import pytest

from tests.support import REPO


def one_line(doc: str) -> str:
    return re.sub(r"\s+", " ", (REPO / doc).read_text())


@pytest.mark.parametrize(
    ("doc", "says", "wrong"),
    [
        pytest.param(
            "README.md",
            "| `backoffLimit` | sums the in-place restarts of the pods running at that moment: a "
            "replaced pod (`ExitCode`) or one not running is missed |",
            "fired only at limit 0",
            id="training-operator-v1.8.1-PastBackoffLimit",
        ),
        pytest.param(
            "docs/kueue.md",
            "(Kueue v0.17's own integrations mark the Workload Finished, reason FailedToStart, "
            "and leave the job suspended)",
            "integrations fail the job",
            id="kueue-v0.17-contradicting-admission",
        ),
        pytest.param(
            "docs/install.md",
            "`app.__version__` (for version",
            "at the release you install (`git checkout v",
            id="install-names-no-untagged-release",
        ),
    ],
)
def test_the_doc_says_what_upstream_does(doc: str, says: str, wrong: str) -> None:
    text = one_line(doc)
    assert says in text
    assert wrong not in text
