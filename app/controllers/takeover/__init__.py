"""The takeover: the running MXJobs of training-operator v1.8 handed over to Metacontroller."""
