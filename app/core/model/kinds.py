"""The kinds the hook reads and writes, and the child types Metacontroller keys them by in a
sync request (`<Kind>.<apiVersion>`)."""

CORE_API_VERSION = "v1"
POD = "Pod"
SERVICE = "Service"
CONFIG_MAP = "ConfigMap"

MXJOB = "MXJob"
MXJOB_API_VERSION = "kubeflow.org/v1"


def child_type(kind: str, api_version: str) -> str:
    """How Metacontroller names a child type in a sync request and a CompositeController."""
    return f"{kind}.{api_version}"


POD_TYPE = child_type(POD, CORE_API_VERSION)
SERVICE_TYPE = child_type(SERVICE, CORE_API_VERSION)
CONFIG_MAP_TYPE = child_type(CONFIG_MAP, CORE_API_VERSION)


def header(kind: str, api_version: str = CORE_API_VERSION) -> dict[str, str]:
    """A child's `apiVersion` and `kind`, the first keys of every child the hook writes."""
    return {"apiVersion": api_version, "kind": kind}
