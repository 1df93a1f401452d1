"""The largest jobs validation admits (the size rule, app/core/validate/sizerule.py), synced once every
child exists: the real API server admits each through the CRD, its children are what the API
server and Metacontroller make of them (tests/support/worst_case.py), and the whole sync
request goes through the real hook (`python -m app serve`, default settings) within its body
limit, answered 200 with every child kept, within Metacontroller's webhook timeout and with
the hook's peak RSS under PEAK_RSS_MIB, the request's parse cost within the size rule's
estimate and the hook's parse budget under either apply strategy. The figures printed are in
docs/reliability.md. On an API server of this module's own (no Metacontroller syncs its jobs)."""

import copy
import json
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from app.core.model.errors import SpecError
from app.core.mxnet.layout import Layout
from app.core.observe.applied import LAST_APPLIED
from app.core.validate import costs, sizerule, validation
from app.core.validate.costs import MiB
from app.service.settings import Settings
from localcluster.apiserver import ApiServer, Binaries, KubectlError, cluster
from localcluster.crds import install_crds
from localcluster.realstack import serve_hook
from tests.support import jobs as s
from tests.support.cluster_errors import fail_on_cluster_error
from tests.support.hooked import sync
from tests.support.resources import kind_key
from tests.support.size_shapes import (
    INLINE_LARGEST,
    LARGEST,
    RELEASE_0_1_0_LARGEST,
    MakeSpec,
    train,
)
from tests.support.worst_case import create_parent, observed_everything, sample_children

# The hook's promise (docs/security.md#memory), half the Deployment's 1 GiB memory limit
# (manifests/base/deployment.yaml); the rest of the limit is for the connections' buffers.
PEAK_RSS_MIB = 512


# The largest admitted job of each shape (tests/support/size_shapes.py; tests/unit/core/test_size_rule.py checks
# each is the largest), but those whose request is smaller than another's of the same kind.
SMALLER = {"five-letter-name", "longest-name", "tune-job", "one-letter-name-port-1"}
WORST = [
    *(pytest.param(Layout.CONFIG_MAP, *p.values, id=p.id) for p in LARGEST if p.id not in SMALLER),
    # Under a CompositeController that declares no ConfigMaps, each shape's largest.
    *(pytest.param(Layout.INLINE, *p.values, id=f"inline-{p.id}") for p in INLINE_LARGEST),
    # A job of release 0.1.0's layout: the two largest requests.
    *(
        pytest.param(Layout.CONFIG_MAP_KEYS, *p.values, id=f"release-0.1.0-{p.id}")
        for p in RELEASE_0_1_0_LARGEST
        if p.id in {"one-letter-name", "three-sidecars"}
    ),
]


@pytest.fixture(scope="module")
def apiserver(
    k8s_binaries: Binaries, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ApiServer]:
    """This module's own server (`namespace` makes each test's namespace on it), with our CRDs."""
    with fail_on_cluster_error(), cluster(k8s_binaries, tmp_path_factory.mktemp("worst")) as server:
        install_crds(server)
        yield server


@pytest.fixture
def hook(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """A fresh real hook with its default settings, so that its peak memory is this sync's:
    (base URL, pid)."""
    with serve_hook(tmp_path) as started:
        yield started.url, started.process.pid


def _job(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    job = s.mxjob(spec, name)
    job["metadata"] = {"name": name, "namespace": namespace}
    return job


def _post(url: str, body: bytes) -> tuple[int, dict[str, Any], float]:
    request = urllib.request.Request(
        f"{url}/sync", data=body, headers={"Content-Type": "application/json"}
    )
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as answer:
        status, content = answer.status, answer.read()
    return status, json.loads(content), time.perf_counter() - start


def _without_last_applied(request: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(request)
    for group in out["children"].values():
        for child in group.values():
            child["metadata"].get("annotations", {}).pop(LAST_APPLIED, None)
    return out


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def _within_the_parse_budget(request: dict[str, Any], body: bytes, cost_estimate: int) -> None:
    """The request's parse cost is at most the size rule's estimate, and the parse budget admits
    it with room to spare, as Metacontroller sends it under either apply strategy: with its
    last-applied annotations (dynamic-apply), and without them (server-side apply keeps only
    managedFields)."""
    assert cost_estimate <= sizerule.MAX_SYNC_PARSE_COST
    ssa = orjson.dumps(_without_last_applied(request))
    peaks = {
        "dynamic-apply": costs.parse_cost(body),
        "server-side apply": costs.parse_cost(ssa),
    }
    for strategy, cost in peaks.items():
        print(
            f"\n{strategy}: parse cost {cost / MiB:.0f} MiB (estimate "
            f"{cost_estimate / MiB:.0f} MiB), {costs.PARSE_BUDGET / cost:.2f}x within the "
            "budget"
        )
        assert cost <= cost_estimate
        assert cost * 21 // 20 <= costs.PARSE_BUDGET


@pytest.mark.parametrize(("layout", "name", "make", "most"), WORST)
def test_largest_admitted_job_syncs_within_the_body_limit(
    apiserver: ApiServer,
    namespace: str,
    hook: tuple[str, int],
    layout: Layout,
    name: str,
    make: MakeSpec,
    most: int,
) -> None:
    spec = make(most)
    typed = validation.validated_spec(name, spec, layout)
    parent = create_parent(apiserver, _job(name, namespace, spec))
    now = datetime.now(UTC).replace(microsecond=0)
    request = observed_everything(sample_children(apiserver, parent, now, layout), layout)
    request["parent"]["status"] = sync(copy.deepcopy(request), now)["status"]
    assert "MXJobInvalidSpec" not in json.dumps(request["parent"]["status"])
    body = orjson.dumps(request)

    estimate = sizerule.sync_request_bytes(name, typed, None, layout)
    assert len(body) <= estimate <= sizerule.MAX_SYNC_BYTES
    assert len(body) * 4 // 3 <= Settings().max_body_bytes
    _within_the_parse_budget(
        request, body, sizerule.sync_request_parse_cost(name, typed, None, layout)
    )
    url, pid = hook
    status, answer, seconds = _post(url, body)
    assert status == 200
    observed = {
        (kind, child["metadata"]["name"])
        for kind, group in request["children"].items()
        for child in group.values()
    }
    assert {(kind_key(c), c["metadata"]["name"]) for c in answer["children"]} == observed
    peak = _peak_rss_mib(pid)
    print(
        f"\n{layout.value} {name}/{most}: request {len(body):,} bytes (estimate {estimate:,}), "
        f"{len(observed):,} children, round trip {seconds:.2f} s, hook peak RSS {peak:.0f} MiB"
    )
    # Metacontroller gives up on a sync after its webhook timeout and retries it for ever: the
    # largest admitted job must be answered inside it, even on a loaded machine.
    assert seconds < Settings().webhook_timeout_seconds
    assert peak < PEAK_RSS_MIB


def test_the_api_server_refuses_one_replica_past_the_mx_config_bound(
    apiserver: ApiServer, namespace: str
) -> None:
    beyond = train()(3690)
    with pytest.raises(SpecError, match="the size rule"):
        validation.validated_spec("a", beyond)
    with pytest.raises(KubectlError, match="the size rule: MX_CONFIG"):
        apiserver.apply(_job("a", namespace, beyond))
