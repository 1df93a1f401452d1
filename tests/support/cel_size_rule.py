"""The CRD's CEL forms of the size rule (app/core/validate/sizerule.py), each counted from below so that the
CRD refuses only jobs the hook refuses too: `rule()` a lower bound of the longest MX_CONFIG,
`sync_rule()` one of the sync request, the hook's estimate without the templates' bytes
(which CEL cannot measure) and without the ConfigMap.

CEL has no sum over a map, so the rule adds one term per known replica type, found in any
letter case as the CRD's other rules find it. Per type of n replicas it counts what the hook
writes (`"t":[...]`, n entries `{"port":P,"url":"<name>-t-<i>"}`, their commas and index
digits; P's digits exactly for the default port, as 1 for a declared one), and for the whole only
the braces, keys and the shortest `task`; the labels and the commas between types are left
out, some tens of bytes below the hook's exact count. `python -m tests.support.cel_size_rule`
prints it."""

from app.core.model.spec import ORDER, ReplicaType
from app.core.validate.sizerule import (
    MAX_MX_CONFIG,
    MAX_SYNC_BYTES,
    SYNC_BYTES_PER_CONTAINER,
    SYNC_BYTES_PER_NAME_CHARACTER,
    SYNC_BYTES_PER_REPLICA,
)

SPECS = "self.spec.mxReplicaSpecs"
# '{"cluster":}' + '{}' + ',"labels":,' + '{}' + the shortest task, '"task":{"index":0,"type":"tuner"}}'
FIXED = 12 + 2 + 11 + 2 + 36


def _replica(kind: str) -> str:
    return f"{SPECS}[{SPECS}.filter(k, k.matches('(?i)^{kind}$'))[0]]"


def _port_digits(r: str) -> str:
    """9091's 4 digits, or 1 where the mxnet container declares ports: reading the number of
    its `mxjob-port` costs more than the API server's CEL budget allows (a port list has no
    bound), so a declared port counts as its fewest digits."""
    declared = (
        f"has({r}.template) && has({r}.template.spec) && has({r}.template.spec.containers)"
        f" && {r}.template.spec.containers.exists(c, has(c.name) && c.name == 'mxnet'"
        " && has(c.ports))"
    )
    return f"({declared} ? 1 : 4)"


# Digits of the indices 0 to n-1 are n*D minus this, D being the digits of n-1.
_SHORTER = [10 * (10**d - 1) // 9 for d in range(10)]


def _term(rtype: ReplicaType) -> str:
    """`"t":[...]` for one type of n replicas: n entries of 20 characters plus the port's
    digits, the job name and t, their indices' digits, and n-1 commas."""
    kind = rtype.lowered
    r = _replica(kind)
    n = f"(has({r}.replicas) ? {r}.replicas : 1)"
    width = f"size(string({n} - 1))"
    entry = f"20 + {_port_digits(r)} + size(self.metadata.name) + {len(kind)} + {width} + 1"
    shorter = f"{_SHORTER}[{width} - 1]".replace(" ", "")
    body = f"({n} > 0 ? {n} * ({entry}) - {shorter} - 1 : 0)"
    found = f"size({SPECS}.filter(k, k.matches('(?i)^{kind}$'))) == 0"
    return f"({found} ? 0 : {len(kind) + 5} + {body})"


def rule() -> str:
    terms = " + ".join(_term(t) for t in sorted(ORDER, key=ORDER.__getitem__))
    return f"!has(self.spec) || !has({SPECS}) || {FIXED} + {terms} <= {MAX_MX_CONFIG}"


def _sync_term(rtype: ReplicaType) -> str:
    """One type's n replicas times the hook's bytes per replica, less the template's own."""
    kind = rtype.lowered
    r = _replica(kind)
    n = f"(has({r}.replicas) ? {r}.replicas : 1)"
    spec = f"has({r}.template) && has({r}.template.spec)"
    containers = f"{r}.template.spec.containers"
    inits = f"{r}.template.spec.initContainers"
    extra = (
        f"({spec} && has({containers}) && size({containers}) > 1 ? size({containers}) - 1 : 0)"
        f" + ({spec} && has({inits}) ? size({inits}) : 0)"
    )
    per_replica = (
        f"{SYNC_BYTES_PER_REPLICA} + {SYNC_BYTES_PER_CONTAINER} * ({extra})"
        f" + {SYNC_BYTES_PER_NAME_CHARACTER} * size(self.metadata.name)"
    )
    found = f"size({SPECS}.filter(k, k.matches('(?i)^{kind}$'))) == 0"
    return f"({found} ? 0 : {n} * ({per_replica}))"


def sync_rule() -> str:
    terms = " + ".join(_sync_term(t) for t in sorted(ORDER, key=ORDER.__getitem__))
    return f"!has(self.spec) || !has({SPECS}) || {terms} <= {MAX_SYNC_BYTES}"


if __name__ == "__main__":
    print(rule())
    print(sync_rule())
