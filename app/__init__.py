"""mxjob-controller: a Metacontroller sync hook for Kubeflow MXJobs."""

# The one version source: package metadata (pyproject.toml reads it), the image tag (`make
# image`), the manifests' and the chart's image pins, `python -m app --version` and the
# `mxjob_build_info` metric. tests/manifests/test_release.py checks that every copy agrees.
__version__ = "0.3.0"
