"""The golden sync requests: a job's life as Metacontroller would show it to the hook.

`python -m tests.support.golden_cases` rewrites tests/golden/*.json from the cases of
golden_phases.py and golden_policies.py; review the diff, since the response files are the
hook's expected answers."""

import json
import sys
from datetime import datetime
from pathlib import Path

from tests.support import golden_phases, golden_policies
from tests.support.golden_life import CASES, GOLDEN
from tests.support.golden_phases import released_0_1_0
from tests.support.hooked import sync

__all__ = ["CASES", "paths", "released_0_1_0", "times", "write"]
# The cases enter CASES as their modules are read, in this order.
CASE_MODULES = (golden_phases, golden_policies)


def paths(name: str) -> tuple[Path, Path]:
    return GOLDEN / f"{name}.request.json", GOLDEN / f"{name}.response.json"


def times() -> dict[str, datetime]:
    """When each golden request is answered (the hook's `now`), kept beside the files."""
    raw = json.loads((GOLDEN / "now.json").read_text())
    return {name: datetime.fromisoformat(at) for name, at in raw.items()}


def write() -> None:
    GOLDEN.mkdir(exist_ok=True)
    now = {}
    for name, make in CASES.items():
        req, at = make()
        now[name] = at.isoformat()
        request_path, response_path = paths(name)
        request_path.write_text(json.dumps(req, indent=2) + "\n")
        response_path.write_text(json.dumps(sync(req, at), indent=2) + "\n")
    (GOLDEN / "now.json").write_text(json.dumps(now, indent=2) + "\n")


if __name__ == "__main__":
    write()
    sys.exit(0)
