"""The examples image's programs import one another from its WORKDIR: so do these tests."""

import sys

from e2e.images import EXAMPLES_IMAGE_FOLDER

sys.path.insert(0, str(EXAMPLES_IMAGE_FOLDER))
