"""`python -m scripts.soak`: soak the sync hook on loopback."""

import sys

from scripts.soak.main import main

sys.exit(main())
