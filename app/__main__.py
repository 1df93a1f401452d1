"""`python -m app`: the commands of app/cli/main.py, as the `mxjob-controller` command runs them."""

import sys

from app.cli.entry import run

sys.exit(run("python -m app"))
