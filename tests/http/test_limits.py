"""Limits of the web layer: body size (413 before reading), JSON nesting, memory, slow syncs,
and the JSON log lines, in-process through the ASGI app."""

import io
import json
import logging
import sys
from typing import Any

import anyio
import orjson
import pytest

from app.core.validate import costs
from app.service import errors, intake, replies, web
from app.service.jsonlog import CURRENT_JOB, JsonFormatter
from app.service.settings import Settings
from tests.support import jobs as s
from tests.support import json_shapes
from tests.support.servers import asgi_client

NEW_JOB = orjson.dumps(s.request(s.mxjob(s.train_spec())))


def _app(**settings: Any) -> Any:
    return web.create_app(Settings(frozen_clock=s.NOW, **settings))


def _call(app: Any, headers: list[tuple[bytes, bytes]], chunks: list[bytes]) -> dict[str, Any]:
    """POST /sync at the ASGI level; returns the status, the JSON body and how many body
    chunks the app asked for."""
    asked = 0
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal asked
        asked += 1
        if asked > len(chunks):
            # The whole body sent, a client waits for its answer: nothing more to receive.
            await anyio.sleep_forever()
        return {"type": "http.request", "body": chunks[asked - 1], "more_body": asked < len(chunks)}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/sync",
        "raw_path": b"/sync",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 1234),
        "server": ("127.0.0.1", 8080),
    }
    anyio.run(app, scope, receive, send)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return {"status": sent[0]["status"], "json": json.loads(body), "chunks_read": asked}


def test_a_declared_length_over_the_limit_is_refused_before_reading_the_body() -> None:
    reply = _call(_app(max_body_bytes=1000), [(b"content-length", b"1000000000")], [b"{}"])
    assert reply["status"] == 413
    assert "exceeds 1000" in reply["json"]["detail"]
    assert reply["chunks_read"] == 0


def test_a_chunked_body_is_refused_once_it_passes_the_limit() -> None:
    chunks = [b"x" * 400] * 10
    reply = _call(_app(max_body_bytes=1000), [(b"transfer-encoding", b"chunked")], chunks)
    assert reply["status"] == 413
    assert reply["chunks_read"] == 3


@pytest.mark.parametrize(
    ("limit", "status"),
    [
        pytest.param(len(NEW_JOB), 200, id="at-the-limit"),
        pytest.param(len(NEW_JOB) - 1, 413, id="one-byte-over"),
    ],
)
def test_the_limit_is_inclusive(limit: int, status: int) -> None:
    with asgi_client(_app(max_body_bytes=limit)) as client:
        assert client.post("/sync", content=NEW_JOB).status_code == status


def _nested(depth: int) -> dict[str, Any]:
    """A valid new job, past its first answer (the status alone), whose mxnet container
    carries a field nested `depth` levels deep."""
    request = s.after_first(s.request(s.mxjob(s.train_spec())))
    deep: Any = "bottom"
    for _ in range(depth):
        deep = {"x": deep}
    container = request["parent"]["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]
    container["containers"][0]["x-deep"] = deep
    return request


def _deep_list(depth: int) -> bytes:
    return b'{"parent": ' + b"[" * depth + b"]" * depth + b"}"


@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        pytest.param(json.dumps(_nested(200)).encode(), 200, None, id="nested-200-levels"),
        pytest.param(json.dumps(_nested(300)).encode(), 422, "cannot answer", id="answer-too-deep"),
        pytest.param(_deep_list(2000), 422, "depth limit exceeded", id="request-too-deep"),
        pytest.param(_deep_list(100_000), 422, "depth limit exceeded", id="request-far-too-deep"),
    ],
)
def test_deep_nesting_is_a_4xx_not_a_crash(body: bytes, status: int, detail: str | None) -> None:
    with asgi_client(_app()) as client:
        reply = client.post("/sync", content=body)
    assert reply.status_code == status
    if detail:
        assert detail in reply.json()["detail"]


def test_a_body_past_the_parse_budget_is_refused_before_parsing() -> None:
    """The largest body of tiny objects within the parse budget is answered; one more `{}`
    and it is refused with 413 naming the budget (docs/security.md#memory)."""
    admitted = json_shapes.most_admitted("tiny-objects")
    one_more = admitted.replace(b'"junk":[', b'"junk":[{},', 1)
    assert costs.parse_cost(admitted) <= costs.PARSE_BUDGET < costs.parse_cost(one_more)
    with asgi_client(_app()) as client:
        assert client.post("/sync", content=admitted).status_code == 200
        reply = client.post("/sync", content=one_more)
    assert reply.status_code == 413
    assert "more than the hook's parse budget of 480 MiB" in reply.json()["detail"]


def test_a_body_too_short_to_reach_the_parse_budget_is_not_counted() -> None:
    most_per_byte = max(costs.PARSE_COST_PER_CONTAINER, costs.PARSE_COST_PER_VALUE) + 1
    longest = costs.PARSE_BUDGET // most_per_byte
    assert costs.parse_cost(b"," * longest) <= costs.PARSE_BUDGET
    with pytest.raises(errors.Refused, match="parse budget"):
        replies.check_parse_cost(b"," * (longest + 1))


def _lines(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_sync_over_budget_is_logged_as_a_warning_naming_the_job(json_log: io.StringIO) -> None:
    with asgi_client(_app(slow_sync_seconds=1e-9)) as client:
        assert client.post("/sync", content=NEW_JOB).status_code == 200
    [line] = _lines(json_log)
    assert line["level"] == "warning"
    assert line["message"].startswith("slow sync")
    assert (line["namespace"], line["job"], line["outcome"]) == ("default", "mnist", "ok")
    assert line["duration_ms"] > 0


def test_every_answer_is_one_json_line_with_the_job(json_log: io.StringIO) -> None:
    invalid = s.request(s.mxjob({"mxReplicaSpecs": {}}, name="broken"))
    not_a_request = {"parent": {"metadata": {"name": "x", "namespace": "team-a"}, "kind": "TFJob"}}
    with asgi_client(_app()) as client:
        for body in (NEW_JOB, orjson.dumps(invalid), orjson.dumps(not_a_request), b"nope"):
            client.post("/sync", content=body)
    lines = _lines(json_log)
    assert [(ln["level"], ln.get("namespace"), ln.get("job"), ln["outcome"]) for ln in lines] == [
        ("info", "default", "mnist", "ok"),
        ("info", "default", "broken", "invalid_spec"),
        ("warning", "team-a", "x", "bad_request"),
        ("warning", None, None, "bad_request"),
    ]
    assert {ln["logger"] for ln in lines} == {"mxjob.sync"}


def test_the_formatter_writes_the_job_extras_and_exceptions_on_one_line() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        exc_info = sys.exc_info()
    logger = logging.getLogger("mxjob.test")
    record = logger.makeRecord(
        logger.name, logging.ERROR, __file__, 1, "failed %s", ("here",), exc_info
    )
    record.__dict__["outcome"] = "error"
    token = CURRENT_JOB.set(("ns", "job-a"))
    try:
        line = JsonFormatter().format(record)
    finally:
        CURRENT_JOB.reset(token)
    assert "\n" not in line
    parsed = json.loads(line)
    assert (parsed["namespace"], parsed["job"]) == ("ns", "job-a")
    assert (parsed["message"], parsed["outcome"]) == ("failed here", "error")
    assert "ValueError: boom" in parsed["exception"]


def test_large_requests_are_taken_one_at_a_time_while_small_ones_pass() -> None:
    """A request of unknown or large length holds the large-request slot from its first
    byte to its answer; one that declares a small length does not wait for it."""
    app, events = _app(), []
    small = [(b"content-length", str(len(NEW_JOB)).encode())]

    async def call(name: str, headers: list[tuple[bytes, bytes]], gate: Any = None) -> None:
        read = False

        async def receive() -> dict[str, Any]:
            nonlocal read
            if read:
                await anyio.sleep_forever()  # waits for its answer
            read = True
            events.append(f"{name} read")
            if gate is not None:
                await gate.wait()
            return {"type": "http.request", "body": NEW_JOB, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                events.append(f"{name} {message['status']}")

        scope = {"type": "http", "method": "POST", "path": "/sync", "headers": headers}
        await app(scope | {"query_string": b"", "root_path": ""}, receive, send)

    async def until(event: str) -> None:
        with anyio.fail_after(10):
            while event not in events:
                await anyio.sleep(0.01)

    async def main() -> None:
        gate = anyio.Event()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(call, "large-a", [], gate)
            await until("large-a read")
            tasks.start_soon(call, "large-b", [])
            tasks.start_soon(call, "small", small)
            await until("small 200")
            await anyio.sleep(0.1)  # time enough for large-b to start reading, were it let
            events.append("a released")
            gate.set()

    anyio.run(main)
    assert events[:4] == ["large-a read", "small read", "small 200", "a released"]
    # Once large-a's answer exists, its slot is large-b's: which of the two happens first
    # is the event loop's choice.
    assert sorted(events[4:6]) == ["large-a 200", "large-b read"]
    assert events[6:] == ["large-b 200"]


@pytest.mark.parametrize(
    ("spec", "inline"),
    [
        pytest.param(s.train_spec(), True, id="small-job"),
        pytest.param(s.train_spec(5, 10), True, id="sixteen-replicas"),
        pytest.param(s.train_spec(5, 11), False, id="seventeen-replicas"),
        pytest.param({"mxReplicaSpecs": {"Worker": {}}}, True, id="absent-count-is-one"),
        pytest.param({"mxReplicaSpecs": {"Worker": {"replicas": "2"}}}, False, id="count-a-string"),
        pytest.param({"mxReplicaSpecs": {"Worker": {"replicas": True}}}, False, id="count-a-bool"),
        pytest.param(
            {"mxReplicaSpecs": {"Worker": {"replicas": 20}, "Server": {"replicas": -10}}},
            False,
            id="negative-count-hides-nothing",
        ),
        pytest.param({"mxReplicaSpecs": []}, False, id="specs-not-a-map"),
        pytest.param(None, False, id="no-spec"),
    ],
)
def test_only_small_jobs_are_answered_on_the_event_loop(spec: Any, inline: bool) -> None:
    """A job of a few replicas is answered on the event loop (a bounded millisecond of work),
    anything larger or unexpected in the worker thread; where it runs never changes the
    answer."""
    body = s.request(s.mxjob(spec) if spec is not None else s.mxjob(s.train_spec()))
    if spec is None:
        del body["parent"]["spec"]
    assert intake._few_replicas(body) is inline
