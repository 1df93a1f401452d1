"""The ASGI app and its routes (app/service/web.py), in-process: /sync answers as the core
does and counts the outcome, the probes, the OpenAPI document and what the service logs. The
limits, refusals, authentication and the real server are tests/http's."""

import io
import json
from collections.abc import Iterator

import orjson
import pytest
from prometheus_client import CONTENT_TYPE_LATEST

from app import __version__
from app.service import metrics, web
from app.service.settings import Settings
from tests.support.golden_cases import paths, times
from tests.support.servers import AsgiClient, asgi_client

GOLDEN = "all-running"


@pytest.fixture
def client() -> Iterator[AsgiClient]:
    """The app with its clock frozen at the golden case's time."""
    with asgi_client(web.create_app(Settings(frozen_clock=times()[GOLDEN]))) as app:
        yield app


def syncs(outcome: str) -> float:
    """mxjob_sync_requests_total{outcome} as /metrics reports it (0 before the first)."""
    value = metrics.REGISTRY.get_sample_value("mxjob_sync_requests_total", {"outcome": outcome})
    return value or 0.0


def test_a_sync_is_answered_as_the_golden_file_says_and_counted(client: AsgiClient) -> None:
    request_path, response_path = paths(GOLDEN)
    ok = syncs("ok")
    reply = client.post("/sync", content=request_path.read_bytes())
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "application/json"
    assert reply.json() == json.loads(response_path.read_text())
    assert syncs("ok") == ok + 1


def test_a_body_that_is_not_a_request_is_a_422_counted_as_bad_request(client: AsgiClient) -> None:
    bad = syncs("bad_request")
    reply = client.post("/sync", content=orjson.dumps({"parent": {"metadata": {}}}))
    assert reply.status_code == 422
    assert "parent.metadata.name: Field required" in reply.json()["detail"]
    assert "connection" not in reply.headers, "the body was read: the connection can stay"
    assert syncs("bad_request") == bad + 1


def test_the_probes(client: AsgiClient) -> None:
    health = client.get("/healthz")
    assert (health.status_code, health.text) == (200, "ok")
    assert health.headers["content-type"].startswith("text/plain")
    scraped = client.get("/metrics")
    assert scraped.headers["content-type"] == CONTENT_TYPE_LATEST
    assert "# TYPE mxjob_sync_requests_total counter" in scraped.text


def test_without_a_token_the_openapi_document_and_its_pages_are_served(
    client: AsgiClient,
) -> None:
    document = client.get("/openapi.json").json()
    assert document["info"]["version"] == __version__
    assert {"/sync", "/customize", "/healthz", "/metrics"} <= set(document["paths"])
    assert [client.get(page).status_code for page in ("/docs", "/redoc")] == [200, 200]


# Which job, its outcome and level: tests/http/test_limits.py. Here, what else a line says.
def test_each_answer_is_logged_with_its_size(client: AsgiClient, json_log: io.StringIO) -> None:
    request, response = (path.read_bytes() for path in paths(GOLDEN))
    client.post("/sync", content=request)
    client.post("/customize", content=orjson.dumps({"parent": {"metadata": {"name": "j"}}}))
    synced, customized = (json.loads(line) for line in json_log.getvalue().splitlines())
    assert synced["message"] == "sync answered"
    assert (synced["replicas"], synced["children"]) == (5, len(json.loads(response)["children"]))
    assert synced["body_bytes"] == len(request), "the request's size"
    assert (customized["message"], customized["status"]) == ("customize answered", 200)
