"""The soak's requests: a weighted mix of syncs as Metacontroller sends them, each with the
core's own answer to compare against."""

import copy
from dataclasses import dataclass
from typing import Any

import orjson

from app.core.model.kinds import CONFIG_MAP_TYPE
from app.core.observe.applied import LAST_APPLIED
from scripts.bench.workloads import SIZES, running_job_request
from tests.support import jobs as s
from tests.support.hooked import sync


@dataclass(frozen=True)
class Case:
    name: str
    body: bytes
    expected: bytes
    weight: int


def _observed(child: dict[str, Any], **status: Any) -> dict[str, Any]:
    """A child as Metacontroller sends it back: with its status and the last-applied copy."""
    out = s.observed(child, **status)
    out["metadata"].setdefault("annotations", {})[LAST_APPLIED] = orjson.dumps(child).decode()
    return out


def _new(spec: dict[str, Any], name: str) -> dict[str, Any]:
    """A new job's first sync: no children yet, the ConfigMap type declared (as shipped)."""
    return s.request(s.mxjob(spec, name=name), others={CONFIG_MAP_TYPE: []})


def _running(spec: dict[str, Any], name: str) -> dict[str, Any]:
    """A job of any spec once every child exists, its ConfigMap with them; the sized jobs
    come from the benchmark's builder (`running_job_request`), with the API server's
    metadata and defaults."""
    parent = s.mxjob(spec, name=name)
    first = s.created(_new(spec, name))
    pods = [_observed(p, **s.pod_status("Running")) for p in s.pods_of(first)]
    services = [_observed(x) for x in s.services_of(first)]
    maps = [_observed(c) for c in first["children"] if c["kind"] == "ConfigMap"]
    return s.request(parent | {"status": first["status"]}, pods, services, {CONFIG_MAP_TYPE: maps})


def _restarting() -> dict[str, Any]:
    request = _running(s.train_spec(2, 4, "ExitCode"), "restarting")
    pod = request["children"]["Pod.v1"]["default/restarting-worker-1"]
    pod["status"] = s.pod_status("Failed", exit_code=137)
    return request


def corpus() -> list[Case]:
    """The request mix as Metacontroller sends it with the shipped CompositeController (the
    job's ConfigMap among the children): mostly small jobs, some mid-size, a rare
    1/100/1000 one."""
    small, typical, large = (size for size in SIZES if size.named)
    requests = {
        "new 2s+2w": (_new(s.train_spec(), "fresh"), 30),
        "running 1 worker": (_running({"mxReplicaSpecs": {"Worker": s.replica()}}, "solo"), 30),
        f"running {small.label}": (running_job_request(small), 30),
        "restarting (ExitCode 137)": (_restarting(), 10),
        "invalid spec": (_new({"mxReplicaSpecs": {}}, "broken"), 5),
        f"running {typical.label}": (running_job_request(typical), 4),
        f"running {large.label}": (running_job_request(large), 1),
    }
    cases = []
    for name, (request, weight) in requests.items():
        body = orjson.dumps(request)
        expected = orjson.dumps(sync(copy.deepcopy(request), s.NOW))
        cases.append(Case(name, body, expected, weight))
    return cases
