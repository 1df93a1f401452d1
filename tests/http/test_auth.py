"""Optional bearer token and TLS: off by default, 401 counted in /metrics, a rotated token
file taken up without a restart, and HTTPS for real with a throwaway CA."""

import hmac
import os
import ssl
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.service import web
from app.service.auth import BearerToken
from app.service.errors import SettingsError
from app.service.settings import Settings, from_env
from tests.support import jobs as s
from tests.support.hooked import sync
from tests.support.servers import AsgiClient, asgi_client, self_signed, serving

TOKEN = "s3cr3t-token-for-tests"
NEW_JOB = orjson.dumps(s.request(s.mxjob(s.train_spec())))


@pytest.fixture
def guarded() -> Iterator[AsgiClient]:
    with asgi_client(web.create_app(Settings(auth_token=TOKEN))) as client:
        yield client


def _unauthorized(client: AsgiClient) -> float:
    text = client.get("/metrics").text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "mxjob_sync_requests_total" and sample.labels["outcome"] == "unauthorized"
    )


def test_auth_is_off_by_default() -> None:
    assert not BearerToken(from_env({})).enabled
    with asgi_client(web.create_app(Settings())) as client:
        assert client.post("/sync", content=NEW_JOB).status_code == 200


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        pytest.param({}, 401, id="missing"),
        pytest.param({"Authorization": "Bearer wrong"}, 401, id="wrong-token"),
        pytest.param({"Authorization": f"Bearer {TOKEN}x"}, 401, id="token-plus-one"),
        pytest.param({"Authorization": f"Bearer {TOKEN[:-1]}"}, 401, id="token-minus-one"),
        pytest.param({"Authorization": f"Basic {TOKEN}"}, 401, id="other-scheme"),
        pytest.param({"Authorization": TOKEN}, 401, id="no-scheme"),
        pytest.param({"Authorization": "Bearer"}, 401, id="no-token"),
        pytest.param({"Authorization": "Bearer ünïcødé".encode()}, 401, id="non-ascii"),
        pytest.param({"X-Token": TOKEN}, 401, id="other-header"),
        pytest.param({"Authorization": f"Bearer {TOKEN}"}, 200, id="right"),
        pytest.param({"Authorization": f"bearer  {TOKEN} "}, 200, id="scheme-any-case"),
    ],
)
def test_sync_needs_the_token(guarded: AsgiClient, headers: dict[str, Any], status: int) -> None:
    before = _unauthorized(guarded)
    reply = guarded.post("/sync", content=NEW_JOB, headers=headers)
    assert reply.status_code == status
    assert _unauthorized(guarded) - before == (status == 401)
    if status == 401:
        assert reply.json() == {"detail": "missing or wrong bearer token"}
        assert reply.headers["www-authenticate"] == "Bearer"


def test_the_token_is_checked_before_the_body_is_read(guarded: AsgiClient) -> None:
    huge = {"Content-Length": str(10**12)}
    reply = guarded.post("/sync", content=b"{}", headers=huge)
    assert reply.status_code == 401


@pytest.mark.parametrize("path", ["/healthz", "/metrics"])
def test_probes_and_metrics_stay_open(guarded: AsgiClient, path: str) -> None:
    assert guarded.get(path).status_code == 200


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        pytest.param("/openapi.json", {}, 401, id="openapi-without-token"),
        pytest.param("/openapi.json", {"Authorization": "Bearer wrong"}, 401, id="openapi-wrong"),
        pytest.param(
            "/openapi.json", {"Authorization": f"Bearer {TOKEN}"}, 200, id="openapi-token"
        ),
        pytest.param("/docs", {}, 404, id="docs-off"),
        pytest.param("/docs", {"Authorization": f"Bearer {TOKEN}"}, 404, id="docs-off-with-token"),
        pytest.param("/redoc", {}, 404, id="redoc-off"),
        pytest.param("/docs/oauth2-redirect", {}, 404, id="oauth2-redirect-off"),
    ],
)
def test_with_a_token_the_api_document_needs_it_and_the_pages_are_off(
    guarded: AsgiClient, path: str, headers: dict[str, str], status: int
) -> None:
    """The browser pages cannot send a bearer token, so they are off; the document a
    program reads needs the token like /sync."""
    reply = guarded.get(path, headers=headers)
    assert reply.status_code == status
    if status == 401:
        assert reply.headers["www-authenticate"] == "Bearer"
    if status == 200:
        assert "/sync" in reply.json()["paths"]


@pytest.mark.parametrize("path", ["/openapi.json", "/docs", "/redoc", "/docs/oauth2-redirect"])
def test_without_a_token_the_api_document_and_pages_are_open(path: str) -> None:
    with asgi_client(web.create_app(Settings())) as client:
        assert client.get(path).status_code == 200


def _rotate(path: Path, token: str) -> None:
    """Replace the file the way the kubelet updates a Secret volume: write aside, rename."""
    aside = path.with_suffix(".new")
    aside.write_text(token + "\n")
    os.replace(aside, path)


def test_a_token_file_is_read_again_when_the_secret_rotates(tmp_path: Path) -> None:
    path = tmp_path / "token"
    _rotate(path, "first")
    check = BearerToken(Settings(auth_token_file=path))
    assert check.allows("Bearer first")
    _rotate(path, "second")
    assert check.allows("Bearer second")
    assert not check.allows("Bearer first")


def test_a_token_file_that_breaks_keeps_the_last_good_token(tmp_path: Path) -> None:
    path = tmp_path / "token"
    _rotate(path, "first")
    check = BearerToken(Settings(auth_token_file=path))
    _rotate(path, "   ")
    assert check.allows("Bearer first")
    path.unlink()
    assert check.allows("Bearer first")
    assert not check.allows(None)


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        pytest.param({"MXJOB_AUTH_TOKEN": " "}, "is empty", id="blank-token"),
        pytest.param(
            {"MXJOB_AUTH_TOKEN": "a", "MXJOB_AUTH_TOKEN_FILE": __file__}, "not both", id="both"
        ),
        pytest.param({"MXJOB_TLS_CERT_FILE": __file__}, "is not PEM", id="cert-not-pem"),
        pytest.param({"MXJOB_TLS_KEY_FILE": "/k"}, "readable file", id="missing-key"),
        pytest.param({"MXJOB_MAX_BODY_BYTES": "0"}, "greater than 0", id="zero-limit"),
        pytest.param({"MXJOB_SLOW_SYNC_SECONDS": "-1"}, "greater than 0", id="negative-budget"),
        pytest.param({"MXJOB_LOG_LEVEL": "loud"}, "must be DEBUG", id="log-level"),
        pytest.param(
            {"MXJOB_MAX_BODY_BYTES": "1000", "MXJOB_BYTES_IN_FLIGHT": "999"},
            "at least MXJOB_MAX_BODY_BYTES",
            id="budget-below-the-body-limit",
        ),
        pytest.param({"MXJOB_SEND_TIMEOUT_SECONDS": "0"}, "greater than 0", id="zero-send-timeout"),
        pytest.param({"MXJOB_MAX_CONNECTIONS": "0"}, "greater than 0", id="no-connections"),
    ],
)
def test_bad_settings_stop_the_start(env: dict[str, str], problem: str) -> None:
    with pytest.raises(SettingsError, match=problem):
        from_env(env)


def test_limits_default_from_the_body_limit_and_the_webhook_timeout() -> None:
    config = from_env({"MXJOB_MAX_BODY_BYTES": "1000", "MXJOB_WEBHOOK_TIMEOUT_SECONDS": "5"})
    assert config.budget_bytes == 1000
    assert (config.read_chunk_seconds, config.read_seconds, config.send_seconds) == (1, 4, 5)
    defaults = from_env({})
    assert defaults.budget_bytes == defaults.max_body_bytes
    assert (defaults.read_chunk_seconds, defaults.read_seconds, defaults.send_seconds) == (2, 8, 10)
    assert (defaults.header_timeout_seconds, defaults.max_connections) == (5, 256)


def test_an_unreadable_token_file_stops_the_start(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="No such file"):
        # Gone since the settings were read (they check it is there).
        web.create_app(Settings.model_construct(auth_token_file=tmp_path / "missing"))


@pytest.fixture(scope="module")
def https_server() -> Iterator[tuple[Any, ssl.SSLContext]]:
    """The real server over HTTPS with a throwaway CA and the token from a file."""
    with tempfile.TemporaryDirectory() as folder:
        tls = self_signed(Path(folder))
        (Path(folder) / "token").write_text(TOKEN + "\n")
        trust = ssl.create_default_context(cafile=str(tls.ca))
        env = {
            "MXJOB_TLS_CERT_FILE": str(tls.cert),
            "MXJOB_TLS_KEY_FILE": str(tls.key),
            "MXJOB_AUTH_TOKEN_FILE": str(Path(folder) / "token"),
            "MXJOB_FROZEN_CLOCK": s.NOW.isoformat(),
        }
        with serving(env, scheme="https", verify=trust) as server:
            yield server, trust


def test_https_with_the_ca_and_the_token(https_server: tuple[Any, ssl.SSLContext]) -> None:
    server, trust = https_server
    headers = {"Authorization": f"Bearer {TOKEN}"}
    reply = httpx.post(f"{server.url}/sync", content=NEW_JOB, headers=headers, verify=trust)
    assert reply.status_code == 200
    assert reply.json() == sync(orjson.loads(NEW_JOB), s.NOW)
    assert httpx.post(f"{server.url}/sync", content=NEW_JOB, verify=trust).status_code == 401


def test_https_refuses_clients_that_do_not_trust_the_ca(
    https_server: tuple[Any, ssl.SSLContext],
) -> None:
    server, _ = https_server
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(f"{server.url}/healthz", verify=ssl.create_default_context())


def test_plain_http_gets_no_answer_from_the_tls_port(
    https_server: tuple[Any, ssl.SSLContext],
) -> None:
    server, _ = https_server
    plain = server.url.replace("https://", "http://")
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{plain}/healthz", timeout=5)


def test_the_token_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every check goes through hmac.compare_digest, of two SHA-256 digests: the same length
    whatever the caller sent, right, wrong, empty or a megabyte long."""
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(given: bytes, expected: bytes) -> bool:
        compared.append((given, expected))
        return real(given, expected)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    check = BearerToken(Settings(auth_token=TOKEN))
    sent = [f"Bearer {TOKEN}", f"Bearer {TOKEN}x", "Bearer ", None, "Bearer " + "x" * 2**20]
    assert [check.allows(header) for header in sent] == [True, False, False, False, False]
    assert len(compared) == len(sent)
    assert {(len(given), len(expected)) for given, expected in compared} == {(32, 32)}
    assert len({expected for _, expected in compared}) == 1
