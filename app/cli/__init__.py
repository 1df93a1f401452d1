"""The command line: `python -m app serve|render|ttl-controller|kueue-status`."""
