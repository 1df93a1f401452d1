"""MX_CONFIG's length, worked out from the replica counts alone: a job of any size costs the
same to check."""

from app.core.mxconfig import labels_text, main_port
from app.core.spec import MXJobSpec, ReplicaSpec, ReplicaType


def mx_config_bytes(name: str, spec: MXJobSpec) -> int:
    """The length of the longest MX_CONFIG the job's processes read, worked out from the
    counts alone (a job of any size costs the same): what `app.core.mxconfig.shared_parts` and
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
