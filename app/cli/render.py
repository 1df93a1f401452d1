"""The `render` command: print what the hook answers for MXJob manifests at their creation, and
refuse the fields the API server would refuse."""

import sys
from datetime import UTC, datetime
from pathlib import Path

from app.cli.legacy import legacy_notes
from app.cli.schema import unknown_fields
from app.core.model.errors import RenderError
from app.core.render import manifests, render_documents


def run(path: str, namespace: str, expand: bool, child_types: tuple[str, ...]) -> int:
    """Print the answer for the jobs in the file at `path` (- for stdin); return the exit code."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
        documents = manifests(text)
        rendered = render_documents(documents, datetime.now(UTC), namespace, expand, child_types)
    except (OSError, UnicodeDecodeError, RenderError) as err:
        print(f"render: {path}: {err}", file=sys.stderr)
        return 2
    # The whole answer still goes out: the status of a refused job says what to fix.
    sys.stdout.write(rendered.text)
    unknown = []
    for n, document in enumerate(documents, start=1):
        for note in legacy_notes(document):
            print(f"render: {path}: document {n}: note: {note}", file=sys.stderr)
        unknown += [f"document {n}: {field}" for field in unknown_fields(document)]
    for problem in unknown + rendered.invalid:
        print(f"render: {path}: {problem}", file=sys.stderr)
    return 1 if unknown or rendered.invalid else 0
