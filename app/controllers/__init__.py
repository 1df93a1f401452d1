"""Controllers beside the hook: the TTL controller and the Kueue Workload-status writer."""
