"""The reasons of the conditions the hook sets on an MXJob, in Kubeflow's words."""

REASON_CREATED = "MXJobCreated"


REASON_RUNNING = "MXJobRunning"


REASON_RESTARTING = "MXJobRestarting"


REASON_SUSPENDED = "MXJobSuspended"


REASON_RESUMED = "MXJobResumed"


REASON_SUCCEEDED = "MXJobSucceeded"


REASON_FAILED = "MXJobFailed"


REASON_DEADLINE = "DeadlineExceeded"


REASON_BACKOFF = "BackoffLimitExceeded"


REASON_INVALID = "MXJobInvalidSpec"


# Reasons that stop a job against its will: its running pods go, whatever cleanPodPolicy says.
REASONS_STOPPED = (REASON_DEADLINE, REASON_BACKOFF)
