"""The real server: uvicorn on a free loopback port, the golden requests over HTTP."""

import asyncio
import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from prometheus_client.parser import text_string_to_metric_families

from app.service import web
from app.service.quiet import TICK_SECONDS, QuietServer
from app.service.server import GC_THRESHOLD
from app.service.settings import Settings
from tests.support.golden_cases import CASES, paths, times
from tests.support.servers import serving

NOW = times()


BY_TIME: dict[str, list[str]] = {}
for _name, _at in sorted(NOW.items()):
    BY_TIME.setdefault(_at.isoformat(), []).append(_name)


@pytest.fixture(scope="module", params=sorted(BY_TIME))
def golden_server(request: pytest.FixtureRequest) -> Iterator[tuple[list[str], str]]:
    """One server per distinct golden time, its clock frozen at that time."""
    with serving({"MXJOB_FROZEN_CLOCK": request.param}) as server:
        yield BY_TIME[request.param], server.url


@pytest.mark.slow
def test_golden_requests_over_http(golden_server: tuple[list[str], str]) -> None:
    cases, url = golden_server
    for name in cases:
        request_path, response_path = paths(name)
        answer = httpx.post(
            f"{url}/sync",
            content=request_path.read_bytes(),
            headers={"Content-Type": "application/json"},
            timeout=10,
        )
        assert answer.status_code == 200, name
        assert answer.json() == json.loads(response_path.read_text()), name


def test_every_golden_case_is_sent() -> None:
    assert sorted(n for names in BY_TIME.values() for n in names) == sorted(CASES)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serving({}) as server:
        yield server.url


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        pytest.param(b"not json", "request body is not JSON", id="not-json"),
        pytest.param(b"[1, 2]", "a sync request is a JSON object", id="not-an-object"),
        pytest.param(b"{}", "parent: Field required", id="no-parent"),
        pytest.param(b'{"parent": {"metadata": {}}}', "parent.metadata.name", id="no-name"),
        pytest.param(
            b'{"parent": {"kind": "TFJob", "metadata": {"name": "a"}}}',
            "parent.kind",
            id="other-kind",
        ),
    ],
)
def test_not_a_sync_request_is_a_4xx_with_a_reason(server: str, body: bytes, detail: str) -> None:
    answer = httpx.post(f"{server}/sync", content=body, timeout=10)
    assert answer.status_code == 422
    assert detail in answer.json()["detail"]


def _samples(url: str) -> dict[tuple[str, str], float]:
    text = httpx.get(f"{url}/metrics", timeout=5).text
    return {
        (sample.name, sample.labels.get("outcome", "")): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_healthz_and_metrics_count_syncs_by_outcome(server: str) -> None:
    good = paths("new-job")[0].read_bytes()
    invalid = paths("invalid-spec")[0].read_bytes()
    before = _samples(server)
    for body in (good, good, invalid, b"nope"):
        httpx.post(f"{server}/sync", content=body, timeout=10)
    after = _samples(server)
    assert httpx.get(f"{server}/healthz", timeout=5).text == "ok"
    counted = {
        key: after[key] - before.get(key, 0)
        for key in after
        if key[0] in ("mxjob_sync_requests_total", "mxjob_sync_duration_seconds_count")
    }
    assert counted == {
        ("mxjob_sync_requests_total", "ok"): 2,
        ("mxjob_sync_requests_total", "invalid_spec"): 1,
        ("mxjob_sync_requests_total", "bad_request"): 1,
        ("mxjob_sync_duration_seconds_count", "ok"): 2,
        ("mxjob_sync_duration_seconds_count", "invalid_spec"): 1,
        ("mxjob_sync_duration_seconds_count", "bad_request"): 1,
    }


SETTLED = """
import gc, sys
from app.service import quiet, server, settings

def run(self, sockets=None):
    print(repr(("app.service.web" in sys.modules, gc.get_freeze_count() > 0, gc.get_threshold())))
    self.started = True

quiet.QuietServer.run = run
server.run(settings.from_env(), "127.0.0.1", 0)
"""


def test_the_collector_settles_before_serving() -> None:
    """`python -m app serve` imports the app, then freezes what is alive and raises the young
    generation's threshold, before uvicorn serves (server.settle_memory)."""
    seen = subprocess.run(
        [sys.executable, "-c", SETTLED], capture_output=True, text=True, check=True
    ).stdout
    assert seen.strip() == repr((True, True, GC_THRESHOLD))


def test_the_idle_server_wakes_once_a_second_until_told_to_stop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """uvicorn wakes ten times a second to see a signal and renew its Date header; the hook's
    server once a second (docs/performance.md, "At rest")."""
    quiet = QuietServer(uvicorn.Config(web.create_app(Settings())))
    waits: list[float] = []
    real_timeout = asyncio.timeout

    def timeout(delay: float) -> asyncio.Timeout:
        waits.append(delay)
        quiet.should_exit = len(waits) == 3
        return real_timeout(0)

    monkeypatch.setattr("app.service.quiet.asyncio.timeout", timeout)
    asyncio.run(quiet.main_loop())
    assert waits == [TICK_SECONDS] * 3
    assert TICK_SECONDS == 1.0


@pytest.mark.parametrize("how", ["signal", "stop"])
def test_a_signal_or_stop_ends_the_idle_server_at_once(
    monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Not at its next tick (an hour away here): a hook told to stop by Kubernetes, or the
    probe server when its component ends, stops now."""
    monkeypatch.setattr("app.service.quiet.TICK_SECONDS", 3600.0)
    quiet = QuietServer(uvicorn.Config(web.create_app(Settings())))
    ticked = threading.Event()

    async def on_tick(counter: int) -> bool:
        ticked.set()
        return await QuietServer.on_tick(quiet, counter)

    monkeypatch.setattr(quiet, "on_tick", on_tick)
    thread = threading.Thread(target=asyncio.run, args=(quiet.main_loop(),), daemon=True)
    thread.start()
    assert ticked.wait(10)
    if how == "signal":
        quiet.handle_exit(signal.SIGTERM, None)
    else:
        quiet.stop()
    thread.join(10)
    assert not thread.is_alive()


def test_uvicorn_lines_are_json_without_terminal_colours() -> None:
    """uvicorn logs its start with a `color_message` (ANSI escapes) beside the message; the
    hook's JSON lines carry the plain message alone."""
    with serving({}) as hook:
        hook.stop()
        lines = [json.loads(line) for line in hook.log_lines()]
    started = [line for line in lines if line["logger"] == "uvicorn.error"]
    assert any(line["message"].startswith("Uvicorn running on") for line in started)
    assert [key for line in lines for key in line if key == "color_message"] == []
    assert [line for line in lines if "\x1b" in json.dumps(line, ensure_ascii=False)] == []
