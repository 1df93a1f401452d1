"""The command line run in the test's own process: `app.cli.main.main(argv)` with stdin, stdout
and stderr as strings, as a `subprocess.run` of `mxjob-controller` would give them.

In process, a second `render` costs what its jobs cost: the CEL grammar and the CRD's compiled
rules are kept from the first (a new process builds them again, about a second). What it does not
show is the process around `main`: the console script, `python -m app`, the exit on Ctrl-C, the
interpreter's start. tests/manifests/test_package.py, tests/http/test_interrupt.py and
tests/unit/core/test_render.py::test_render_command run those as processes.
"""

import contextlib
import io
import sys
from dataclasses import dataclass

import pytest

from app.cli.main import main


@dataclass(frozen=True)
class Ran:
    """What a command gave: its exit code and what it wrote."""

    returncode: int
    stdout: str
    stderr: str


def run(*args: str, stdin: str = "") -> Ran:
    """`mxjob-controller *args` with `stdin` as its input; argparse's exits (--help, --version,
    a usage error) are exit codes here too."""
    out, err = io.StringIO(), io.StringIO()
    with (
        pytest.MonkeyPatch.context() as patch,
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        patch.setattr(sys, "stdin", io.StringIO(stdin))
        try:
            code = main(list(args))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1 if exit_.code else 0
    return Ran(code, out.getvalue(), err.getvalue())
