"""The size rule (docs/reliability.md#the-size-rule): a job is admitted only if every process can
start with its MX_CONFIG and every sync request of it, once all of its children exist, fits the
hook's body limit and parse budget with room to spare."""

from dataclasses import dataclass
from typing import Any

import orjson

from app.core.model.spec import MXJobSpec, ReplicaType
from app.core.mxnet.layout import Layout, own_env
from app.core.mxnet.mxconfig import (
    cluster_text_counts,
    kubelet_literal,
    labels_text,
    main_container,
    main_port,
    mx_config_around_index,
    mx_config_bytes,
    service_port,
    tuner_label,
)
from app.core.validate.costs import PARSE_BUDGET, Copies, MiB, copies, cost_of, sum_copies

# The rule's three parts, and where each constant's figure comes from:
# docs/reliability.md#where-the-size-rules-figures-come-from.
# 1. MX_CONFIG fits one environment string (Linux's MAX_ARG_STRLEN, with `NAME=` and its NUL).
MAX_MX_CONFIG = 128 * 1024 - len("MX_CONFIG=") - 1


# A round cap under the most replicas any MX_CONFIG that fits can list: the cheap first check.
MAX_REPLICAS = 4000


# 2. The sync request, once every child exists, stays well inside MXJOB_MAX_BODY_BYTES. The
#    CRD's CEL rule counts it from below with the first three constants
#    (tests/support/cel_size_rule.py).
MAX_SYNC_BYTES = 48 * MiB


SYNC_BYTES_PER_REPLICA = 9_500


SYNC_BYTES_PER_CONTAINER = 2_100


SYNC_BYTES_PER_NAME_CHARACTER = 22


SYNC_BYTES_PER_PORT = 80


# 3. Parsing that request stays well inside the hook's parse budget (`costs.PARSE_BUDGET`): its
#    `{`/`[` and `,` per replica, per further container and per port, measured and rounded up.
MAX_SYNC_PARSE_COST = PARSE_BUDGET * 7 // 8


SYNC_BRACKETS_PER_REPLICA = 240


SYNC_COMMAS_PER_REPLICA = 320


SYNC_BRACKETS_PER_CONTAINER = 64


SYNC_COMMAS_PER_CONTAINER = 64


SYNC_BRACKETS_PER_PORT = 3


SYNC_COMMAS_PER_PORT = 4


# What a refusal under the inline layout adds: its requests grow with the square of the job.
_INLINE_HINT = (
    " (every container carries the whole MX_CONFIG while the CompositeController declares no "
    "ConfigMap children or a pod of the job was made under one that did not: declare them, "
    "as metacontroller/compositecontroller.yaml does, and suspend and resume a running job, "
    "and its pods stay small)"
)


def size_problems(job_name: str, spec: MXJobSpec, layout: Layout = Layout.CONFIG_MAP) -> list[str]:
    """The size rule: every process can start with its MX_CONFIG, and every sync of the job
    fits the hook's body limit and its parse budget with room to spare, once all of its
    children exist in `layout`."""
    mx_config = mx_config_bytes(job_name, spec)
    if mx_config > MAX_MX_CONFIG:
        return [
            f"spec.mxReplicaSpecs: the size rule: MX_CONFIG would be {mx_config:,} bytes, and "
            f"a process's environment variable holds at most {MAX_MX_CONFIG:,}; use fewer "
            "replicas or a shorter job name"
        ]
    hint = _INLINE_HINT if layout is Layout.INLINE else ""
    request = sync_request_bytes(job_name, spec, mx_config, layout)
    if request > MAX_SYNC_BYTES:
        carry = f"carry about {request // MiB} MiB"
        return _request_refused(carry, MAX_SYNC_BYTES, f"smaller pod templates{hint}")
    cost = sync_request_parse_cost(job_name, spec, mx_config, layout)
    if cost > MAX_SYNC_PARSE_COST:
        fewer = f"pod templates of fewer values (list entries, map keys){hint}"
        return _request_refused(
            f"take about {cost // MiB} MiB to parse", MAX_SYNC_PARSE_COST, fewer
        )
    return []


def _request_refused(would: str, most: int, instead: str) -> list[str]:
    """The size rule's refusal of a job whose sync request `would` be more than `most`."""
    return [
        "spec.mxReplicaSpecs: the size rule: with every pod running, a sync request of "
        f"this job would {would}, more than {most // MiB} MiB; use fewer replicas or {instead}"
    ]


def sync_request_bytes(
    job_name: str, spec: MXJobSpec, mx_config: int | None = None, layout: Layout = Layout.CONFIG_MAP
) -> int:
    """An upper estimate of a sync request's bytes once every child exists in `layout`, given
    `mx_config_bytes` if it is known: per replica, a measured constant and its template's
    copies (`copies`); how and against what (docs/reliability.md#the-size-rules-estimates)."""
    if mx_config is None:
        mx_config = mx_config_bytes(job_name, spec)
    layouts = _layout_copies(job_name, spec, layout)
    total = 2 * mx_config if layout is Layout.CONFIG_MAP else layouts.config_map[0]
    for rtype, replica in spec.mxReplicaSpecs.items():
        per_container = layouts.by_type[rtype][0] * _containers(replica.template)
        total += replica.replicas * (
            _replica_estimates(job_name, replica.template)[0] + per_container
        )
    return total


def sync_request_parse_cost(
    job_name: str, spec: MXJobSpec, mx_config: int | None = None, layout: Layout = Layout.CONFIG_MAP
) -> int:
    """An upper estimate of a sync request's `costs.parse_cost` once every child
    exists in `layout`: `sync_request_bytes`'s bytes, and its `{`/`[` and `,` counted the same
    way, replica by replica (docs/reliability.md#the-size-rules-estimates)."""
    if mx_config is None:
        mx_config = mx_config_bytes(job_name, spec)
    replicas = sum(replica.replicas for replica in spec.mxReplicaSpecs.values())
    layouts = _layout_copies(job_name, spec, layout)
    total = (
        2 * cost_of(replicas + 16, 2 * replicas + 16, mx_config)
        if layout is Layout.CONFIG_MAP
        else cost_of(*layouts.config_map[1:], layouts.config_map[0])
    )
    for rtype, replica in spec.mxReplicaSpecs.items():
        extra = layouts.by_type[rtype]
        containers = _containers(replica.template)
        per_container = cost_of(extra[1], extra[2], extra[0]) * containers
        total += replica.replicas * (
            _replica_estimates(job_name, replica.template)[1] + per_container
        )
    return total


@dataclass(frozen=True)
class _LayoutCopies:
    """What a layout adds to the ConfigMap layout's estimate, as `copies` counts: the
    ConfigMap's part, and each container's by replica type."""

    config_map: Copies
    by_type: dict[ReplicaType, Copies]


# `_layout_copies` of the jobs seen last, by what it reads: the name, the layout and each
# replica type's count, port and label. Bounded like `_ESTIMATES`, and for the same reasons.
_LAYOUTS: dict[tuple[Any, ...], _LayoutCopies] = {}


def _layout_copies(job_name: str, spec: MXJobSpec, layout: Layout) -> _LayoutCopies:
    """The env a container of `layout` carries beyond the ConfigMap layout's, in the pod and
    Metacontroller's copies (`copies`), from above, and what the ConfigMap adds; remembered
    (docs/reliability.md#the-size-rules-estimates)."""
    if layout is Layout.CONFIG_MAP:
        return _LayoutCopies((0, 0, 0), dict.fromkeys(spec.mxReplicaSpecs, (0, 0, 0)))
    types = tuple(
        (rtype, replica.replicas, main_port(replica), tuner_label(replica))
        for rtype, replica in spec.mxReplicaSpecs.items()
    )
    key = (job_name, layout, *types)
    found = _LAYOUTS.get(key)
    if found is None:
        found = _layout_walked(job_name, spec, layout)
        if sum(len(label) for *_, label in types) <= _ESTIMATES_KEY_MOST:
            if len(_LAYOUTS) >= _ESTIMATES_MOST:
                _LAYOUTS.clear()
            _LAYOUTS[key] = found
    return found


def _layout_walked(job_name: str, spec: MXJobSpec, layout: Layout) -> _LayoutCopies:
    own = copies(list(own_env(job_name, spec, layout)))
    cluster = cluster_text_counts(job_name, spec)
    labels = kubelet_literal(labels_text(spec))
    texts = {
        rtype: _mx_config_copies(cluster, labels, rtype, spec.replicas(rtype))
        for rtype in spec.mxReplicaSpecs
    }
    if layout is Layout.CONFIG_MAP_KEYS:
        longest = max(texts.values(), default=(0, 0, 0))
        return _LayoutCopies(sum_copies(longest, longest), dict.fromkeys(texts, own))
    return _LayoutCopies((0, 0, 0), {rtype: sum_copies(own, text) for rtype, text in texts.items()})


def _mx_config_copies(
    cluster: tuple[int, int, int, int], labels: str, rtype: ReplicaType, replicas: int
) -> Copies:
    """`copies` of the longest MX_CONFIG text of a pod of `rtype` in the inline layout: its
    `cluster` from the counts (in the pod's JSON and its last-applied copy a letter costs 2
    bytes, a `"` 6), the rest written out."""
    length, quotes, brackets, commas = cluster
    before, after = mx_config_around_index("", labels, rtype.lowered)
    rest = before + str(max(replicas - 1, 0)) + after
    return sum_copies(copies(rest), (2 * length + 4 * quotes, 2 * brackets, 2 * commas))


def _containers(template: dict[str, Any]) -> int:
    """How many containers of the template get our env (init containers get none)."""
    return len((template.get("spec") or {}).get("containers") or [])


# The estimates of the templates seen last (docs/performance.md#the-size-rules-memos). A bounded
# dict, not functools.lru_cache: the key is made from the arguments (a template is not hashable)
# and one over _ESTIMATES_KEY_MOST bytes is not kept. A hit is what the walk returns: pure.
_ESTIMATES: dict[tuple[int, bytes], tuple[int, int]] = {}


_ESTIMATES_MOST = 128


_ESTIMATES_KEY_MOST = 64 * 1024


def _replica_estimates(job_name: str, template: dict[str, Any]) -> tuple[int, int]:
    """(replica_sync_bytes, replica_parse_cost) of `template`, remembered."""
    try:
        key = (len(job_name), orjson.dumps(template))
    except TypeError:  # what orjson cannot write (an integer past 64 bits): not remembered
        return _estimates(job_name, template)
    found = _ESTIMATES.get(key)
    if found is None:
        found = _estimates(job_name, template)
        if len(key[1]) <= _ESTIMATES_KEY_MOST:
            if len(_ESTIMATES) >= _ESTIMATES_MOST:
                _ESTIMATES.clear()
            _ESTIMATES[key] = found
    return found


def _estimates(job_name: str, template: dict[str, Any]) -> tuple[int, int]:
    """(replica_sync_bytes, replica_parse_cost) of `template`, its copies walked once."""
    pod_spec = template.get("spec") or {}
    containers = len(pod_spec.get("containers") or []) + len(pod_spec.get("initContainers") or [])
    further = max(containers - 1, 0)
    ports = main_container(template).get("ports") or []
    size, brackets, commas = copies(template)
    service = copies({"ports": [service_port(p) for p in ports]})
    sync_bytes = (
        SYNC_BYTES_PER_REPLICA
        + SYNC_BYTES_PER_CONTAINER * further
        + SYNC_BYTES_PER_NAME_CHARACTER * len(job_name)
        + size
        + service[0]
        + SYNC_BYTES_PER_PORT * len(ports)
    )
    parse = cost_of(
        SYNC_BRACKETS_PER_REPLICA
        + SYNC_BRACKETS_PER_CONTAINER * further
        + SYNC_BRACKETS_PER_PORT * len(ports)
        + brackets
        + service[1],
        SYNC_COMMAS_PER_REPLICA
        + SYNC_COMMAS_PER_CONTAINER * further
        + SYNC_COMMAS_PER_PORT * len(ports)
        + commas
        + service[2],
        sync_bytes,
    )
    return sync_bytes, parse


# The per-replica parts of the two estimates, on their own: what the tests hold against the
# real API server's figures (tests/apiserver/test_size_estimate.py), not remembered.
def replica_sync_bytes(job_name: str, template: dict[str, Any]) -> int:
    """The estimate's bytes for one replica of `template` (see `sync_request_bytes`)."""
    return _estimates(job_name, template)[0]


def replica_parse_cost(job_name: str, template: dict[str, Any]) -> int:
    """The parse-cost estimate for one replica of `template` (see `sync_request_parse_cost`)."""
    return _estimates(job_name, template)[1]
