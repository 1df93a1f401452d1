"""The command line: `mxjob-controller serve|render|takeover|ttl-controller|kueue-status`
(`python -m app` from a checkout)."""
