"""A build context's .dockerignore as its patterns, comments and blank lines left out."""

from pathlib import Path


def patterns(folder: Path) -> list[str]:
    """The patterns of `folder`'s .dockerignore, in order."""
    lines = (folder / ".dockerignore").read_text().splitlines()
    return [line for line in lines if line and not line.startswith("#")]
