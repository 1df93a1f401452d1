"""`python -m scripts.bench.e2e`: the end-to-end benchmark on the real stack."""

import sys

from scripts.bench.e2e.main import main

sys.exit(main(sys.argv[1:]))
