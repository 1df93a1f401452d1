"""A tune job carrying user text in each place a user writes it (a tuner-server-key annotation,
a legacy `label`, a template's own annotation and env), and what its processes must read."""

from typing import Any

from app.core.mxnet import mxconfig
from tests.support import jobs as s

# Another text for the legacy `label` of a second replica type, so both sources are checked
# at once.
LEGACY = "$(DMLC_NUM_WORKER)$$-$("
# A template's own variable and annotation: the template's to write, passed on untouched.
THEIRS = {"name": "MINE", "value": "$$-$(DMLC_ROLE)"}
ANNOTATION = {"note": "$(DMLC_ROLE) $$"}


def tune_job(text: str) -> dict[str, Any]:
    """A tune job whose TunerServer's tuner-server-key annotation is `text` and whose
    TunerTracker's legacy label is LEGACY."""
    server = s.replica(2)
    server["template"]["metadata"] = {"annotations": {mxconfig.TUNER_SERVER_KEY: text} | ANNOTATION}
    server["template"]["spec"]["containers"][0]["env"] = [THEIRS]
    tracker = s.replica(1) | {"label": LEGACY}
    specs = {"TunerTracker": tracker, "TunerServer": server, "Tuner": s.replica(1)}
    return s.mxjob({"jobMode": "MXTune", "mxReplicaSpecs": specs}, "tune")


def expected_labels(text: str) -> dict[str, str]:
    """MX_CONFIG's labels of `tune_job(text)`, as its processes must read them."""
    return {"tunertracker": LEGACY, "tunerserver": text, "tuner": ""}
