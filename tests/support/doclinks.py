"""What the docs point at, and what of it is missing: relative links and their anchors (GitHub's
slugs), `make` targets, and repository paths in backticks or commands."""

import re
from collections.abc import Iterator
from pathlib import Path

FENCE = re.compile(r"^(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)")
MAKE = re.compile(r"(?:^|[\s;&|(`])make\s+((?:[A-Z_]+=\S+\s+)*)([a-z][a-z0-9.-]*)")
TARGET = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*)\s*:(?!=)", re.MULTILINE)
# A token that can only be a path of this repository: free of placeholders and globs.
PATHLIKE = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_./-]*")


def lines_outside_code(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of prose, fenced blocks left out."""
    fenced = False
    for n, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
        elif not fenced:
            yield n, line


def code_blocks(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) inside fenced blocks."""
    fenced = False
    for n, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
        elif fenced:
            yield n, line


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation but '-' and '_'
    dropped, each space a '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").strip().lower()
    return "".join("-" if c == " " else c for c in text if c.isalnum() or c in " -_")


def anchors(text: str) -> set[str]:
    """Every anchor of a Markdown page: its headings' slugs (a repeated one numbered as GitHub
    numbers it) and explicit ids."""
    seen: dict[str, int] = {}
    out = set(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text))
    for _, line in lines_outside_code(text):
        # Indented up to a list item's depth: a heading inside a numbered step is one too.
        heading = re.match(r"^ {0,4}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            base = slug(heading.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            out.add(f"{base}-{count}" if count else base)
    return out


def links(text: str) -> Iterator[tuple[int, str]]:
    """(line number, target) of every link in prose, code spans left out."""
    for n, line in lines_outside_code(text):
        prose = CODE_SPAN.sub("", line)
        for target in LINK.findall(prose) + REFERENCE.findall(prose):
            yield n, target


def broken_links(page: Path, repo: Path) -> Iterator[str]:
    """The relative links of `page` whose file or Markdown anchor is missing."""
    for n, target in links(page.read_text()):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            continue  # a URL: https:, mailto:
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        where = f"{page.relative_to(repo)}:{n}: {target}"
        if not resolved.exists():
            yield f"{where}: no such file"
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text()):
            yield f"{where}: no such heading"


def make_targets(makefile: Path) -> set[str]:
    """The targets a Makefile defines."""
    return set(TARGET.findall(makefile.read_text()))


def named_targets(text: str) -> Iterator[tuple[int, str]]:
    """(line number, target) of every `make X` in code spans and fenced blocks."""
    for n, code in code_text(text):
        for _, target in MAKE.findall(code):
            yield n, target


def code_text(text: str) -> Iterator[tuple[int, str]]:
    """(line number, code) of every code span in prose and every line of a fenced block."""
    for n, line in lines_outside_code(text):
        for _, span in CODE_SPAN.findall(line):
            yield n, span
    yield from code_blocks(text)


def missing_targets(page: Path, repo: Path) -> Iterator[str]:
    """The `make` targets `page` names that the Makefile does not define."""
    defined = make_targets(repo / "Makefile")
    for n, target in named_targets(page.read_text()):
        if target not in defined:
            yield f"{page.relative_to(repo)}:{n}: make {target}: no such target"


def paths(text: str, tops: set[str]) -> Iterator[tuple[int, str]]:
    """(line number, path) of every token in code that starts with one of the repository's
    top-level entries `tops` and holds no placeholder or glob."""
    for n, code in code_text(text):
        for token in re.split(r"[\s=,;()'\"]+", code):
            token = token.split("::")[0].rstrip(".:")
            first = token.split("/")[0]
            if first in tops and ("/" in token or "." in first) and PATHLIKE.fullmatch(token):
                yield n, token


def missing_paths(page: Path, repo: Path, elsewhere: frozenset[str] = frozenset()) -> Iterator[str]:
    """The repository paths `page` names in code that do not exist; a path that names a family
    of files (`tests/golden/resumed` for its request and response) exists if one of them does.
    `elsewhere` are paths of other projects that read like ours."""
    tops = {p.name for p in repo.iterdir() if p.name not in {".git", ".venv"}}
    for n, path in paths(page.read_text(), tops):
        target = repo / path.rstrip("/")
        family = target.parent.is_dir() and any(target.parent.glob(f"{target.name}.*"))
        if not (target.exists() or family or path.rstrip("/.") in elsewhere):
            yield f"{page.relative_to(repo)}:{n}: {path}: no such path"
