"""The images the e2e jobs name, and the folder here that stands for each one's WORKDIR."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
# Built from this folder: its Dockerfile copies train.py into the image's WORKDIR.
EXAMPLES_IMAGE_FOLDER = EXAMPLES / "image"
# examples/image/IMAGE is the one place holding the name; every example and doc snippet uses it.
EXAMPLES_IMAGE = (EXAMPLES_IMAGE_FOLDER / "IMAGE").read_text().strip()
# The e2e checks' own programs (e2e/*.py) run from the repository root; no cluster pulls it.
CHECKS_IMAGE = "mxjob-e2e:local"
# Where a container of each image runs locally: the folder its WORKDIR is built from.
WORKDIRS = {EXAMPLES_IMAGE: EXAMPLES_IMAGE_FOLDER, CHECKS_IMAGE: REPO}
