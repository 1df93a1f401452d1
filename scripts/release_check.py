"""The release rule of CHANGELOG.md's header, for tests/manifests/test_release_check.py and the
release workflow.

`app.__version__` is the version the code at hand will be released as: with `[Unreleased]`
empty, the newest dated section names it; with entries under `[Unreleased]`, it is newer than
every dated section. A tag `v<version>` is released only from the first state: `--tag` also
wants the tag to name `app.__version__` and `[Unreleased]` to be empty.

    python -m scripts.release_check [--tag vX.Y.Z] [--changelog CHANGELOG.md] [--version X.Y.Z]

Prints one line per problem (as a GitHub Actions `::error::` under GITHUB_ACTIONS) and exits 1;
prints nothing and exits 0 when the rule holds.
"""

import argparse
import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATED = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", re.M)
SECTION = re.compile(r"^## ", re.M)


def unreleased(text: str) -> str | None:
    """What stands under `## [Unreleased]` up to the next section (stripped), or None without
    that heading."""
    found = re.search(r"^## \[Unreleased\]$", text, re.M)
    if not found:
        return None
    after = text[found.end() :]
    following = SECTION.search(after)
    return after[: following.start() if following else len(after)].strip()


def as_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def problems(text: str, version: str, tag: str | None = None) -> list[str]:
    """Every way CHANGELOG.md's `text` and `version` break the rule (none: it holds)."""
    dated = DATED.findall(text)
    newest = dated[0] if dated else None
    pending = unreleased(text)
    found = []
    if tag is not None and tag != f"v{version}":
        found.append(f"tag {tag} is not v{version} (app.__version__)")
    if pending and tag is not None:
        found.append(
            "CHANGELOG.md has entries under [Unreleased]: make them the section "
            f"## [{version}] - <date> before tagging v{version}"
        )
    if pending and tag is None:
        if newest and as_tuple(version) <= as_tuple(newest):
            found.append(
                f"CHANGELOG.md has entries under [Unreleased] but app.__version__ is {version}, "
                f"not newer than the newest dated section {newest}: bump it past {newest}"
            )
    elif newest != version:
        found.append(
            f"CHANGELOG.md's newest dated section is {newest or 'missing'}, not "
            f"app.__version__ {version}: add ## [{version}] - <date> above the others"
        )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tag", help="the tag being released, vX.Y.Z")
    parser.add_argument("--changelog", type=Path, default=REPO / "CHANGELOG.md")
    parser.add_argument("--version", help="instead of app.__version__")
    args = parser.parse_args(argv)
    version = args.version
    if version is None:
        sys.path.insert(0, str(REPO))
        from app import __version__ as version
    prefix = "::error::" if os.environ.get("GITHUB_ACTIONS") == "true" else "error: "
    found = problems(args.changelog.read_text(), version, args.tag)
    for problem in found:
        print(prefix + problem)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
