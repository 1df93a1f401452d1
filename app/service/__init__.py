"""The web service around the core: routes, admission, the server, auth, metrics, logs, settings."""
