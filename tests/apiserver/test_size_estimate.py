"""The size rule's estimate of a replica (app/core/validate/sizerule.py, `replica_sync_bytes`) against what
the real Metacontroller sends for it, under its default apply strategy and as shipped
(server-side apply): a small job of each template shape runs on the real API server, and a
running replica's pod and Service, as the API server returns them with managedFields (what
Metacontroller's informers hold and send), must be at most the estimate, in bytes
(`replica_sync_bytes`) and in parse cost (`replica_parse_cost`). What a shape's
template costs beyond the smallest one's, measured and estimated, is printed: the figures in
docs/reliability.md."""

from collections.abc import Callable

import orjson
import pytest

from app.core.validate import costs, sizerule
from localcluster.rest import Rest
from tests.support import jobs as s
from tests.support.scenario import run_job
from tests.support.size_shapes import SHAPES, template

from .conftest import RealStack

NAME = "a"


def _worker(real_stack: RealStack, rest: Rest, namespace: str, name: str, shape: str) -> bytes:
    """Run job `name`, its replicas of `shape`'s template, and return a running Worker's pod
    and Service as Metacontroller's informers hold them, with their keys in the request's
    children maps, as JSON."""
    spec = s.train_spec(servers=0, workers=2)
    for replica in spec["mxReplicaSpecs"].values():
        replica["template"] = template(shape)
    job = s.mxjob(spec, name)
    job["metadata"] = {"name": name, "namespace": namespace}
    run_job(real_stack.apiserver, rest, namespace, job)
    total = b""
    for kind in ("pods", "services"):
        child = rest.get(f"/api/v1/namespaces/{namespace}/{kind}/{name}-worker-0")
        total += orjson.dumps(child) + f'"{namespace}/{name}-worker-0":,'.encode()
    return total


@pytest.mark.parametrize("shape", SHAPES[1:])
def test_the_estimate_bounds_a_replica_as_metacontroller_sends_it(
    real_stack: RealStack,
    rest: Rest,
    namespace: str,
    figure: Callable[[str], None],
    shape: str,
) -> None:
    """Two jobs of one-letter names, one of the smallest template and one of `shape`'s: the
    shape's template costs what the estimate says beyond the smallest's, or less, and its
    replica as a whole is under the estimate."""
    smallest_json = _worker(real_stack, rest, namespace, "b", "smallest")
    measured_json = _worker(real_stack, rest, namespace, NAME, shape)
    smallest, measured = len(smallest_json), len(measured_json)
    over, estimate = (sizerule.replica_sync_bytes(NAME, template(t)) for t in ("smallest", shape))

    strategy = "server-side apply" if real_stack.shipped else "dynamic-apply"
    figure(
        f"{strategy}, {shape}: measured {measured:,} bytes (the smallest {smallest:,}), "
        f"estimate {estimate:,} ({over:,}); beyond the smallest: measured "
        f"{measured - smallest:,}, estimated {estimate - over:,}"
    )
    assert measured - smallest <= estimate - over
    assert measured <= estimate

    for sample, sent in (("smallest", smallest_json), (shape, measured_json)):
        cost = costs.parse_cost(sent)
        cost_estimate = sizerule.replica_parse_cost(NAME, template(sample))
        figure(
            f"{strategy}, {sample}: parse cost measured {cost:,}, estimate {cost_estimate:,} "
            f"({cost_estimate / cost:.2f}x)"
        )
        assert cost <= cost_estimate
