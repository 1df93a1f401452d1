"""The TTL controller: deletes a finished MXJob once its ttlSecondsAfterFinished has passed."""
