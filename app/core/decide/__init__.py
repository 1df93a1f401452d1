"""This sync's decision about the job, from what was observed, and the status assembled from it."""
