"""End-to-end run of the hook with real MXNet processes; see docs/e2e.md."""
