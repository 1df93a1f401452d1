"""mxjob-controller: a Metacontroller sync hook for Kubeflow MXJobs."""
