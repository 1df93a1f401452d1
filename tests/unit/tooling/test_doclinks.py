"""The docs checker (tests/support/doclinks.py) finds what is broken and nothing else."""

from pathlib import Path

import pytest

from tests.support.doclinks import broken_links, missing_paths, missing_targets, slug

GUIDE = """# Guide

## `DMLC_PS_ROOT_PORT=0` without a Scheduler
## v1.7 and older
## Steps
## Steps

   ### Inside a step

```sh
make run
# not a heading
```
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text(GUIDE)
    (tmp_path / "Makefile").write_text("run: x\n\tpython -m app\nVAR := 1\n.PHONY: run\n")
    (tmp_path / "tests" / "golden").mkdir(parents=True)
    (tmp_path / "tests" / "golden" / "resumed.request.json").write_text("{}")
    return tmp_path


def check(repo: Path, text: str) -> list[str]:
    page = repo / "README.md"
    page.write_text(text)
    found = [*broken_links(page, repo), *missing_targets(page, repo), *missing_paths(page, repo)]
    return [line.removeprefix("README.md:1: ") for line in found]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        pytest.param("[a](docs/gone.md)", ["docs/gone.md: no such file"], id="broken-link"),
        pytest.param("[a](docs/guide.md#nowhere)", ["docs/guide.md#nowhere: no such heading"],
                     id="broken-anchor"),
        pytest.param("[a](#top)", ["#top: no such heading"], id="broken-anchor-on-the-page"),
        pytest.param("[a](docs/guide.md#dmlc_ps_root_port0-without-a-scheduler)", [],
                     id="code-in-a-heading"),
        pytest.param("[a](docs/guide.md#v17-and-older)", [], id="dots-dropped"),
        pytest.param("[a](docs/guide.md#steps-1)", [], id="repeated-heading"),
        pytest.param("[a](docs/guide.md#inside-a-step)", [], id="heading-in-a-list-item"),
        pytest.param("[a](docs/guide.md#not-a-heading)",
                     ["docs/guide.md#not-a-heading: no such heading"], id="comment-in-code"),
        pytest.param("[a](https://example.com/x.md#y) [b](mailto:a@b.c)", [], id="urls"),
        pytest.param("`[a](#nowhere)`", [], id="link-in-code"),
        pytest.param("`make test` and `HOST=0 make run`", ["make test: no such target"],
                     id="make-target"),
        pytest.param("make the same two changes", [], id="make-in-prose"),
        pytest.param("`docs/gone.md` and `docs/guide.md`", ["docs/gone.md: no such path"],
                     id="path"),
        pytest.param("`tests/golden/resumed`", [], id="a-family-of-files"),
        pytest.param("`tests/golden/*.json`, `docs/<page>.md`, `kubeflow.org/v1`, `/etc/hosts`",
                     [], id="globs-placeholders-and-others"),
    ],
)  # fmt: skip
def test_the_checker(repo: Path, text: str, found: list[str]) -> None:
    assert check(repo, text) == found


def test_a_code_block_is_checked_too(repo: Path) -> None:
    block = "```sh\nmake fast\nkubectl apply -f docs/gone.yaml\n```\n"
    assert [line.split(": ", 1)[1] for line in check(repo, block)] == [
        "make fast: no such target",
        "docs/gone.yaml: no such path",
    ]


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        pytest.param("What the CRD refuses", "what-the-crd-refuses", id="words"),
        pytest.param("`ttlSecondsAfterFinished`: the TTL controller",
                     "ttlsecondsafterfinished-the-ttl-controller", id="code"),
        pytest.param("The first answer: the status alone", "the-first-answer-the-status-alone",
                     id="colon"),
        pytest.param("[Links](x.md) and <b>tags</b>", "links-and-tags", id="markup"),
    ],
)  # fmt: skip
def test_slugs_as_github_makes_them(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor
