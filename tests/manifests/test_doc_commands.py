"""Every shell command of the pages a newcomer reads first (README.md, docs/install.md,
docs/migrating-from-training-operator.md, docs/kueue.md), read from the pages, is of a kind
tests/support/doc_commands.py names: run without a cluster (here, with the console entry point
`mxjob-controller`), run on the real API server (tests/apiserver/test_doc_commands_on_a_cluster.py)
or listed with the reason it cannot run in the tests. A new command of no kind fails here."""

import re
from pathlib import Path

import pytest

from tests.support import REPO
from tests.support.doc_commands import (
    HERE,
    KINDS,
    NOWHERE,
    PAGES,
    blocks,
    commands,
    kind_of,
    page_commands,
    runs,
)
from tests.support.doc_scripts import run_page

EVERY = [command for page in PAGES for command in page_commands(page)]


def test_every_command_is_run_or_listed() -> None:
    unknown = [f"{c.block.where}: {c.text!r}" for c in EVERY if runs(c) is None]
    assert unknown == [], "give each a kind in tests/support/doc_commands.py (KINDS)"


def test_every_kind_names_commands_of_the_pages() -> None:
    used = {kind_of(part) for command in EVERY for part in command.parts}
    assert [k.name for k in KINDS if k not in used] == []


def test_every_kind_that_does_not_run_says_why() -> None:
    assert [k.name for k in KINDS if (k.runs == NOWHERE) != bool(k.why)] == []


def test_the_tests_a_reason_names_exist() -> None:
    named = {path for k in KINDS for path in re.findall(r"tests/[\w/]+\.py", k.why)}
    assert named
    assert [path for path in sorted(named) if not (REPO / path).is_file()] == []


def test_a_block_without_commands_is_a_commands_output() -> None:
    """An sh block shows commands; a console block without a `$ ` line shows output only."""
    empty = [(b.where, b.language) for p in PAGES for b in blocks(p) if not commands(b)]
    assert empty
    assert {language for _, language in empty} == {"console"}


def test_the_pages_give_the_commands_a_newcomer_types_as_the_entry_point() -> None:
    """The render command of README's "Try it without a cluster" is `mxjob-controller`."""
    renders = [c for c in page_commands("README.md") if "render" in c.text]
    assert [c.text.split()[0] for c in renders] == ["mxjob-controller"]


@pytest.mark.parametrize(
    "page", [p for p in PAGES if any(runs(c) == HERE for c in page_commands(p))]
)
def test_the_commands_that_need_no_cluster_run_as_written(tmp_path: Path, page: str) -> None:
    outcomes = run_page(page, {HERE}, tmp_path)
    assert outcomes
    assert [o.unexpected() for o in outcomes if o.unexpected()] == []
    rendered = [o for o in outcomes if o.command.text.startswith("mxjob-controller render")]
    for outcome in rendered:
        assert "kind: MXJob" in outcome.stdout, outcome.stdout
