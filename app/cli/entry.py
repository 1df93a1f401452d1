"""The `mxjob-controller` command and `python -m app`: the command line of app/cli/main.py,
quiet on Ctrl-C. Nothing is imported here before the guard but this module."""

import os
import sys

# The exit code of a command Ctrl-C stopped before its end: 128 + SIGINT, as a shell reports it.
INTERRUPTED = 130


def run(prog: str | None = None) -> int:
    """Run the command line named `prog` (the name it was run as, by default); return the
    exit code."""
    try:
        from app.cli.main import main

        return main(prog=prog or os.path.basename(sys.argv[0]))
    except KeyboardInterrupt:
        return INTERRUPTED
