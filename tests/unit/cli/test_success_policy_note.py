"""`render`'s note on spec.successPolicy says how the hook reads it."""

from app.cli.legacy import legacy_notes
from tests.support import jobs as s


def test_success_policy_is_noted_with_how_it_is_read() -> None:
    job = s.mxjob(s.train_spec() | {"successPolicy": "AllWorkers"})
    assert legacy_notes(job) == [
        "spec.successPolicy: mxnet-operator v1beta1's success rule, read as it read it: "
        "AllWorkers makes a train job with a Scheduler succeed when every Worker has "
        'succeeded, not when the Scheduler exits; "" (the default) leaves success to the '
        "Scheduler, a single Worker or the Tuner"
    ]


def test_a_job_without_it_gets_no_note() -> None:
    assert legacy_notes(s.mxjob(s.train_spec())) == []
