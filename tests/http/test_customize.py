"""POST /customize in-process: guarded and read like /sync, a 4xx for what is not a request,
and a large request answered off the event loop."""

import orjson
import pytest

from app.integrations import kueue
from app.service import intake, web
from app.service.settings import Settings
from tests.support.jobs import (
    mxjob,
    train_spec,
)
from tests.support.servers import asgi_client

CUSTOMIZE = orjson.dumps({"controller": {}, "parent": mxjob(train_spec())})
SECRET = "kueue-test-token"


@pytest.mark.parametrize(
    ("settings", "body", "headers", "status"),
    [
        pytest.param(Settings(), CUSTOMIZE, {}, 200, id="answered"),
        pytest.param(Settings(), b"not json", {}, 422, id="not-json"),
        pytest.param(Settings(), b"[]", {}, 422, id="not-an-object"),
        pytest.param(Settings(), b'{"parent": 1}', {}, 422, id="no-parent"),
        pytest.param(Settings(auth_token=SECRET), CUSTOMIZE, {}, 401, id="no-token"),
        pytest.param(
            Settings(auth_token=SECRET),
            CUSTOMIZE,
            {"Authorization": f"Bearer {SECRET}"},
            200,
            id="token",
        ),
        pytest.param(
            Settings(max_body_bytes=64 * 1024 * 1024),
            CUSTOMIZE,
            {"Content-Length": str(10**12)},
            413,
            id="too-large",
        ),
    ],
)
def test_the_customize_endpoint(
    settings: Settings, body: bytes, headers: dict[str, str], status: int
) -> None:
    """POST /customize is guarded and read like /sync: a 4xx for what is not a request."""
    with asgi_client(web.create_app(settings)) as client:
        reply = client.post("/customize", content=body, headers=headers)
    assert reply.status_code == status, reply.text
    if status == 200:
        rules = [*(dict(r) for r in kueue.RELATED_RESOURCES), *kueue.namespace_rules("default")]
        assert reply.json() == {"relatedResources": rules}
    else:
        assert reply.json()["detail"]


def test_a_large_customize_request_is_answered() -> None:
    """A job whose spec is larger than what is answered on the event loop."""
    spec = train_spec(workers=2)
    spec["mxReplicaSpecs"]["Worker"]["template"]["metadata"] = {
        "annotations": {f"a{i}": "x" * 100 for i in range(1000)}
    }
    body = orjson.dumps({"controller": {}, "parent": mxjob(spec)})
    assert len(body) > intake.INLINE_BODY
    with asgi_client(web.create_app(Settings())) as client:
        reply = client.post("/customize", content=body)
    assert reply.status_code == 200
