"""`python -m scripts.bench.latency`: where the time goes after a pod changes."""

import sys

from scripts.bench.latency.main import main

sys.exit(main(sys.argv[1:]))
