"""The Kueue Workload-status writer: what Kueue's job integrations write on their Workloads and a
sync hook cannot (docs/kueue.md); run as `mxjob-controller kueue-status`."""
