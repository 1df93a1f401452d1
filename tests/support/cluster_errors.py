"""A stack that cannot start (or stop) fails the test with the cluster's own message."""

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from localcluster.apiserver import ClusterError


@contextmanager
def fail_on_cluster_error() -> Iterator[None]:
    """Turn a ClusterError inside the block into a test failure that shows its message alone."""
    failure = None
    try:
        yield
    except ClusterError as error:
        failure = str(error)
    if failure is not None:
        pytest.fail(failure, pytrace=False)
