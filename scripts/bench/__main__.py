"""`python -m scripts.bench`: the hook's own benchmark (see scripts/bench/hook.py)."""

import sys

from scripts.bench.hook import main

sys.exit(main(sys.argv[1:]))
