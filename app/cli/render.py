"""The `render` command: print what the hook answers for MXJob manifests at their creation."""

import sys
from datetime import UTC, datetime
from pathlib import Path

from app.core.model.errors import RenderError
from app.core.render import render_report


def run(path: str, namespace: str, expand: bool, child_types: tuple[str, ...]) -> int:
    """Print the answer for the jobs in the file at `path` (- for stdin); return the exit code."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
        rendered = render_report(text, datetime.now(UTC), namespace, expand, child_types)
    except (OSError, UnicodeDecodeError, RenderError) as err:
        print(f"render: {path}: {err}", file=sys.stderr)
        return 2
    # The whole answer still goes out: the status of a refused job says what to fix.
    sys.stdout.write(rendered.text)
    for problem in rendered.invalid:
        print(f"render: {path}: {problem}", file=sys.stderr)
    return 1 if rendered.invalid else 0
