"""`python -m app`: the commands of app/cli/main.py."""

import sys

from app.cli.main import main

sys.exit(main())
