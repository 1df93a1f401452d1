"""The sync hook's request envelope, as Metacontroller sends it."""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.core.model.errors import BadRequest
from app.core.model.kinds import POD_TYPE, SERVICE_TYPE
from app.core.model.spec import DEFAULT_REPLICAS

# (namespace, name) of the job a request is about, as far as it says.
JobId = tuple[str | None, str | None]


class _Envelope(BaseModel):
    model_config = ConfigDict(extra="allow")


class ObjectMeta(_Envelope):
    name: str = Field(min_length=1, max_length=253)
    namespace: str | None = None
    uid: str | None = None


class Parent(_Envelope):
    apiVersion: str | None = None
    kind: Literal["MXJob"] | None = None
    metadata: ObjectMeta
    spec: Any = None
    status: dict[str, Any] | None = None


class SyncRequest(_Envelope):
    """`{controller, parent, children, related, finalizing}`; children keyed `<Kind>.<version>`,
    each a map whose keys differ between hook versions (so names come from metadata)."""

    controller: dict[str, Any] | None = None
    parent: Parent
    children: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)
    related: dict[str, Any] = Field(default_factory=dict)
    finalizing: bool = False

    def declares(self, child_type: str) -> bool:
        """Whether the controller declares children of this type: Metacontroller sends every
        declared type as a key of `children`, observed or not, and no other."""
        return child_type in self.children

    def has_pods_or_services(self) -> bool:
        """Whether the job has pods or Services: its other children say nothing about that."""
        return bool(self.children.get(POD_TYPE) or self.children.get(SERVICE_TYPE))

    def observed(self, kind: str) -> list[dict[str, Any]]:
        """Observed children of one type, sorted by name."""
        group = self.children.get(kind, {})
        return sorted(group.values(), key=lambda child: str(name_of(child)))


def name_of(child: dict[str, Any]) -> Any:
    """A child's `metadata.name`, or None where it has none."""
    meta = child.get("metadata")
    return meta.get("name") if isinstance(meta, dict) else None


def read_request(body: Any) -> SyncRequest:
    """The request, or BadRequest naming what is wrong with it."""
    if not isinstance(body, dict):
        raise BadRequest("a sync request is a JSON object with a `parent`")
    try:
        return SyncRequest.model_validate(body)
    except ValidationError as err:
        raise BadRequest(_summary(err)) from None


def _summary(err: ValidationError) -> str:
    problems = []
    for error in err.errors()[:5]:
        field = ".".join(str(part) for part in error["loc"]) or "request"
        problems.append(f"{field}: {error['msg']}")
    return "not a valid sync request: " + "; ".join(problems)


def job_of(body: Any) -> JobId:
    """Which job a request, valid or not, is about, for the logs of a refused or failed sync."""
    parent = _parent(body)
    meta = parent.get("metadata") if parent else None
    if not isinstance(meta, dict):
        return None, None
    return _text(meta.get("namespace")), _text(meta.get("name"))


def _parent(body: Any) -> dict[str, Any] | None:
    parent = body.get("parent") if isinstance(body, dict) else None
    return parent if isinstance(parent, dict) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def declared_replicas(body: Any) -> int | None:
    """How many replicas a request's spec asks for in all (an absent count is 1, as in the
    spec's defaults), read before the request is: None for anything unexpected."""
    parent = _parent(body)
    spec = parent.get("spec") if parent else None
    specs = spec.get("mxReplicaSpecs") if isinstance(spec, dict) else None
    if not isinstance(specs, dict):
        return None
    total = 0
    for replica in specs.values():
        count = replica.get("replicas", DEFAULT_REPLICAS) if isinstance(replica, dict) else None
        if type(count) is not int or count < 0:
            return None
        total += count
    return total
