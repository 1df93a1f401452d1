"""The size rule (docs/reliability.md#the-size-rule): a job is admitted only if every process can
start with its MX_CONFIG and every sync request of it, once all of its children exist, fits the
hook's body limit and parse budget with room to spare."""

import json
from dataclasses import dataclass
from typing import Any

import orjson

from app.parsecost import PARSE_BUDGET, MiB, cost_of
from app.spec import MXJobSpec, ReplicaSpec, ReplicaType
from app.template import (
    Layout,
    kubelet_literal,
    labels_text,
    main_container,
    main_port,
    mx_config_around_index,
    own_env,
    service_port,
    tuner_label,
)

# The size rule (docs/reliability.md), in two parts, both linear in the job's size now that
# MX_CONFIG's shared parts live in one ConfigMap:
# 1. Linux refuses to start a process with an environment string over 128 KiB
#    (MAX_ARG_STRLEN, counting `NAME=` and the final NUL), so a longer MX_CONFIG could
#    never start a container. It grows with replicas x (name length + ~30).
MAX_MX_CONFIG = 128 * 1024 - len("MX_CONFIG=") - 1
# No job of more than 4,001 replicas has an MX_CONFIG that fits, whatever its name and
# ports (4,002 replicas of a job named `a` on port 1 need 131,070 bytes): a round cap just
# under that is the cheap first check, and the CRD's.
MAX_REPLICAS = 4000
# 2. The sync request once every child exists must stay well inside MXJOB_MAX_BODY_BYTES
#    (64 MiB). See `sync_request_bytes` for the estimate and its measured coefficients. The
#    CRD's CEL rule counts it from below with the first three constants
#    (tests/cel_size_rule.py; a test fails if the CRD does not hold the rule they make).
MAX_SYNC_BYTES = 48 * MiB
SYNC_BYTES_PER_REPLICA = 9_500
SYNC_BYTES_PER_CONTAINER = 2_100
SYNC_BYTES_PER_NAME_CHARACTER = 22
SYNC_BYTES_PER_PORT = 80
# 3. Parsing that request must stay well inside the hook's parse budget (app/parsecost.py):
#    a request of many small values costs more to parse than its bytes say. See
#    `sync_request_parse_cost`: its `{`/`[` and `,` per replica besides the template's copies,
#    per further container and per port, measured like the bytes above (a replica of one
#    container 221 and 291 in the largest admitted jobs' requests, a further container 58
#    and 57, a port 2 and 3), rounded up.
MAX_SYNC_PARSE_COST = PARSE_BUDGET * 7 // 8
SYNC_BRACKETS_PER_REPLICA = 240
SYNC_COMMAS_PER_REPLICA = 320
SYNC_BRACKETS_PER_CONTAINER = 64
SYNC_COMMAS_PER_CONTAINER = 64
SYNC_BRACKETS_PER_PORT = 3
SYNC_COMMAS_PER_PORT = 4
# managedFields (fieldsV1) of a template: per field `"f:<key>":{},` besides the key's JSON,
# 7 more (`".":{},`) where the field is an object; per entry of a keyed list
# `"k:<key fields' JSON>":{".":{},...},` besides that JSON string.
FIELD_BYTES = 6
OBJECT_FIELD_BYTES = 7
ENTRY_BYTES = 11
# The fields that key the entries of a pod spec's keyed lists (containers, env, ports, volumes,
# volumeMounts, volumeDevices, hostAliases, topologySpreadConstraints, imagePullSecrets,
# resourceClaims, schedulingGates): the union is taken for every list, which only
# over-counts (a volumeMount's name is no part of its key).
_KEY_FIELDS = frozenset(
    {"name", "containerPort", "port", "protocol", "mountPath", "devicePath", "ip",
     "topologyKey", "whenUnsatisfiable"}
)  # fmt: skip
# Go's encoding/json escapes these in strings; Python's json module writes them as they are.
_GO_ESCAPES = str.maketrans({c: f"\\u{ord(c):04x}" for c in "<>&\u2028\u2029"})
# Compact JSON as Go writes it, less the escapes above: `json.dumps(value, separators=(",", ":"))`
# without making an encoder on every call.
_GO_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def mx_config_bytes(name: str, spec: MXJobSpec) -> int:
    """The length of the longest MX_CONFIG the job's processes read, worked out from the
    counts alone (a job of any size costs the same): what `app.template.shared_parts` and
    `mx_config_around_index` write, character for character."""
    cluster = 1 + max(len(spec.mxReplicaSpecs) - 1, 0)  # its `{`, and commas between types
    task = 0
    for rtype, replica in spec.mxReplicaSpecs.items():
        n, kind = replica.replicas, rtype.lowered
        cluster += _cluster_length(name, rtype, replica)
        if n:
            task = max(task, len(f'"task":{{"index":,"type":"{kind}"}}}}') + len(str(n - 1)))
    labels = labels_text(spec)
    return len('{"cluster":}') + cluster + len(',"labels":,') + len(labels) + task


def cluster_text_counts(name: str, spec: MXJobSpec) -> tuple[int, int, int, int]:
    """MX_CONFIG's `cluster` map as (characters, `"`, `{`/`[`, `,`), from the counts alone
    as `mx_config_bytes` works it out: no name or port needs escaping in JSON or for the
    kubelet."""
    between = max(len(spec.mxReplicaSpecs) - 1, 0)  # commas between types
    length, quotes, brackets, commas = 2 + between, 0, 1, between
    for rtype, replica in spec.mxReplicaSpecs.items():
        n = replica.replicas
        length += _cluster_length(name, rtype, replica)
        quotes += 2 + 6 * n
        brackets += 1 + n
        commas += n + max(n - 1, 0)
    return length, quotes, brackets, commas


def _cluster_length(name: str, rtype: ReplicaType, replica: ReplicaSpec) -> int:
    """The characters of one replica type's `"<type>":[...]` in MX_CONFIG's `cluster`."""
    n, kind = replica.replicas, rtype.lowered
    entry = len('{"port":,"url":"--"}') + len(str(main_port(replica))) + len(name) + len(kind)
    return len(f'"{kind}":[]') + n * entry + _digits(n) + max(n - 1, 0)


def _digits(n: int) -> int:
    """How many digits the indices 0 to n-1 have in all."""
    total, low = 0, 0
    for width in range(1, len(str(n)) + 1):
        high = 10**width
        total += width * max(min(n, high) - low, 0)
        low = high
    return total


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
        return [
            f"spec.mxReplicaSpecs: the size rule: with every pod running, a sync request of "
            f"this job would carry about {request // MiB} MiB, more than "
            f"{MAX_SYNC_BYTES // MiB} MiB; use fewer replicas or smaller pod templates{hint}"
        ]
    cost = sync_request_parse_cost(job_name, spec, mx_config, layout)
    if cost > MAX_SYNC_PARSE_COST:
        return [
            f"spec.mxReplicaSpecs: the size rule: with every pod running, a sync request of "
            f"this job would take about {cost // MiB} MiB to parse, more than "
            f"{MAX_SYNC_PARSE_COST // MiB} MiB; use fewer replicas or pod templates of fewer "
            f"values (list entries, map keys){hint}"
        ]
    return []


def sync_request_bytes(
    job_name: str,
    spec: MXJobSpec,
    mx_config: int | None = None,
    layout: Layout = Layout.CONFIG_MAP,
) -> int:
    """An upper estimate of a sync request's bytes once every child exists, given
    `mx_config_bytes` if it is known.

    Per replica, its pod and Service as Metacontroller sends them: server defaults, a running
    status, and the template three times over under Metacontroller's default apply strategy,
    dynamic-apply: in the pod itself (its JSON as Go writes it, `G` bytes), in the
    last-applied annotation (that JSON again as a string, `G` plus a backslash for every
    quote and backslash in it, `X`), and in managedFields (`M`, see `_fields`: every
    key of every object and the key fields of every entry of a keyed list, the cost of a
    template of many small list entries). Under server-side apply there is no last-applied
    copy: the same estimate bounds that request with `G + X` to spare. The job-wide variables
    live in the job's ConfigMap (one `envFrom` and one required key reference per container).

    The other layouts (`Layout`) add to each container what its env carries beyond
    that (`_layout_copies`): release 0.1.0's, the job-wide variables and a key reference, and
    a ConfigMap that may hold MX_CONFIG's shared parts twice; the inline one, those variables
    and MX_CONFIG's whole text, the job's size in every container, and no ConfigMap.

    The template's part follows the encoding (the copies are exact for a template of
    strings and atomic lists, `_fields` is from above); checked on the real API server
    under the real Metacontroller, both strategies (tests/apiserver/test_size_estimate.py):
    what a template of 730 small env entries, one 20 KB value, 400 ports, 400 volume mounts,
    1,000 args, 400 labels or 3 sidecars costs beyond the smallest template measured 89,060,
    40,117, 158,400, 57,897, 19,812, 15,200 and 5,109 bytes under dynamic-apply (62,780 to
    3,255 under server-side apply), estimated 94,929, 40,154, 162,833, 67,100, 19,812,
    15,296 and 6,744. The rest, from the largest admitted jobs' requests
    (tests/apiserver/test_worst_case.py, a running pod's full status): 9,369 bytes a replica
    of one container and a one-letter job name, 1,761 per further container, 20 per letter of
    the job's name, which the constants round up; 80 per port is the server's defaults
    (`protocol`) in the pod and the Service and in their managedFields keys. The figures are
    in docs/reliability.md.
    """
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
    job_name: str,
    spec: MXJobSpec,
    mx_config: int | None = None,
    layout: Layout = Layout.CONFIG_MAP,
) -> int:
    """An upper estimate of a sync request's parse_cost (app/parsecost.py) once every child
    exists, given `mx_config_bytes` if it is known: `sync_request_bytes`'s bytes, and its
    `{`/`[` and `,` counted the same way, replica by replica.

    The ConfigMap and its last-applied copy hold MX_CONFIG's text: an object and two commas
    a replica at most (`{"port":1,"url":"..."}` and the comma after it), and a few more. A
    replica's count is a measured constant (its pod and Service as the largest admitted
    jobs' requests carry them, a running pod's full status), one per further container and
    per port, and the template's own, counted like its bytes: its JSON in the pod and again
    in the last-applied annotation (structure inside a string counts, as parse_cost counts
    it), and its managedFields, an object per field and per keyed entry (`_fields`).
    Under server-side apply there is no last-applied copy: the same estimate bounds it.
    The other layouts add to each container what `_layout_copies` counts, as the bytes do.
    Checked on the real API server under the real Metacontroller, both strategies
    (tests/apiserver/test_size_estimate.py), and against the largest admitted jobs'
    requests (tests/apiserver/test_worst_case.py); the figures are in docs/reliability.md."""
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


Copies = tuple[int, int, int]


@dataclass(frozen=True)
class _LayoutCopies:
    """What a layout adds to the ConfigMap layout's estimate, as `_copies` counts: the
    ConfigMap's part, and each container's by replica type."""

    config_map: Copies
    by_type: dict[ReplicaType, Copies]


# `_layout_copies` of the jobs seen last, by what it reads: the name, the layout and each
# replica type's count, port and label. A job is validated at every sync and both estimates
# use it (about 1 ms for a job of three types, walked). Bounded like `_ESTIMATES`.
_LAYOUTS: dict[tuple[Any, ...], _LayoutCopies] = {}


def _layout_copies(job_name: str, spec: MXJobSpec, layout: Layout) -> _LayoutCopies:
    """The env a container of `layout` carries beyond the ConfigMap layout's, in the pod and
    its last-applied copy and managedFields (`_copies`), from above: the job-wide variables
    (and release 0.1.0's key references) and, inline, the longest MX_CONFIG text of the type
    as the pod writes it (`kubelet_literal`). Release 0.1.0's ConfigMap may hold
    MX_CONFIG's shared parts under its keys and under this version's: twice the text.
    Remembered (bounded)."""
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
    own = _copies(list(own_env(job_name, spec, layout is Layout.RELEASE_0_1_0)))
    cluster = cluster_text_counts(job_name, spec)
    labels = kubelet_literal(labels_text(spec))
    texts = {
        rtype: _mx_config_copies(cluster, labels, rtype, spec.replicas(rtype))
        for rtype in spec.mxReplicaSpecs
    }
    if layout is Layout.RELEASE_0_1_0:
        longest = max(texts.values(), default=(0, 0, 0))
        return _LayoutCopies(_sum(longest, longest), dict.fromkeys(texts, own))
    return _LayoutCopies((0, 0, 0), {rtype: _sum(own, text) for rtype, text in texts.items()})


def _mx_config_copies(
    cluster: tuple[int, int, int, int], labels: str, rtype: ReplicaType, replicas: int
) -> Copies:
    """`_copies` of the longest MX_CONFIG text of a pod of `rtype` in the inline layout: its
    `cluster` from the counts (`cluster_text_counts`: in the pod's JSON and its
    last-applied copy a letter costs 2 bytes, a `"` 6), the rest (`labels` as written)
    written out."""
    length, quotes, brackets, commas = cluster
    before, after = mx_config_around_index("", labels, rtype.lowered)
    rest = before + str(max(replicas - 1, 0)) + after
    return _sum(_copies(rest), (2 * length + 4 * quotes, 2 * brackets, 2 * commas))


def _sum(*copies: Copies) -> Copies:
    return (
        sum(c[0] for c in copies),
        sum(c[1] for c in copies),
        sum(c[2] for c in copies),
    )


def _containers(template: dict[str, Any]) -> int:
    """How many containers of the template get our env (init containers get none)."""
    return len((template.get("spec") or {}).get("containers") or [])


# The estimates of the templates seen last, by the name's length and the template's JSON: a job
# is validated at every sync, and walking a template of ten env entries costs about 80 us,
# more than the rest of validating a job of three types; remembered, under 1 us. Its templates
# rarely change. Bounded in entries and in the bytes of each key (a larger template is walked
# every time).
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
    size, brackets, commas = _copies(template)
    service = _copies({"ports": [service_port(p) for p in ports]})
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


def replica_sync_bytes(job_name: str, template: dict[str, Any]) -> int:
    """The estimate's bytes for one replica of `template` (see `sync_request_bytes`)."""
    return _estimates(job_name, template)[0]


def replica_parse_cost(job_name: str, template: dict[str, Any]) -> int:
    """The parse-cost estimate for one replica of `template` (see `sync_request_parse_cost`)."""
    return _estimates(job_name, template)[1]


def _copies(value: Any) -> tuple[int, int, int]:
    """`value` in a child and in Metacontroller's copy of it, as (bytes, `{`/`[`, `,`): its
    JSON as Go writes it, that JSON again as the string of a last-applied annotation (a
    backslash more for every quote and backslash; the structure inside the string counts, as
    parse_cost counts it), and its managedFields (`_fields`)."""
    text = _go_json(value)
    size, brackets, commas = _fields(value)
    return (
        2 * len(text.encode()) + text.count('"') + text.count("\\") + size,
        2 * (text.count("{") + text.count("[")) + brackets,
        2 * text.count(",") + commas,
    )


def _go_json(value: Any) -> str:
    """`value`'s compact JSON as Go's encoding/json writes it."""
    return _GO_COMPACT.encode(value).translate(_GO_ESCAPES)


def _fields(value: Any) -> tuple[int, int, int]:
    """A managedFields entry's fieldsV1 for `value`, from above, as (bytes, `{`/`[`, `,`).

    Every key of every object is `"f:<key>":{}` and a comma: its JSON and `FIELD_BYTES`,
    `OBJECT_FIELD_BYTES` more where its value is an object; `{".":{}` and a comma more where
    its value is an object or a list of objects. Every object in a list is `"k:<key fields'
    JSON>":{".":{}` and two commas: the JSON string of its key fields, `ENTRY_BYTES` and
    `OBJECT_FIELD_BYTES` more. The structure in keys counts too. Scalars, and lists of them
    (atomic), add nothing of their own."""
    size = brackets = commas = 0
    if isinstance(value, dict):
        for key, item in value.items():
            text = str(key)
            inner = _fields(item)
            opens = isinstance(item, dict) or (isinstance(item, list) and _has_objects(item))
            size += (
                len(_go_json(key).encode())
                + FIELD_BYTES
                + (OBJECT_FIELD_BYTES if isinstance(item, dict) else 0)
                + inner[0]
            )
            brackets += 1 + text.count("{") + text.count("[") + opens + inner[1]
            commas += 1 + text.count(",") + opens + inner[2]
    elif isinstance(value, list):
        for entry in value:
            if not isinstance(entry, dict):
                continue
            key = _go_json(
                {
                    k: v
                    for k, v in entry.items()
                    if k in _KEY_FIELDS and not isinstance(v, dict | list)
                }
            )
            inner = _fields(entry)
            size += len(_go_json("k:" + key).encode()) + ENTRY_BYTES + OBJECT_FIELD_BYTES + inner[0]
            brackets += 2 + key.count("{") + key.count("[") + inner[1]
            commas += 2 + key.count(",") + inner[2]
    return size, brackets, commas


def _has_objects(items: list[Any]) -> bool:
    return any(isinstance(item, dict) for item in items)
