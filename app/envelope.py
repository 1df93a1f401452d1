"""The sync hook's request envelope, as Metacontroller sends it."""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

POD = "Pod.v1"
SERVICE = "Service.v1"
CONFIG_MAP = "ConfigMap.v1"


class BadRequest(Exception):
    """Not a sync request at all: answered with a 4xx, and Metacontroller touches nothing."""


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

    def observed(self, kind: str) -> list[dict[str, Any]]:
        """Observed children of one type, sorted by name."""
        group = self.children.get(kind, {})
        return sorted(group.values(), key=lambda child: str(_name(child)))


def _name(child: dict[str, Any]) -> Any:
    meta = child.get("metadata")
    return meta.get("name") if isinstance(meta, dict) else None


def parse(body: Any) -> SyncRequest:
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
