"""app/service/probes.py in-process: the optional components' /healthz and /metrics, their
answers and the real uvicorn server they run on (tests/http/test_component_probes.py runs the
commands as processes and holds thousands of idle connections against them)."""

import logging.config
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter

from app.cli import components
from app.service import jsonlog, probes


def registry() -> CollectorRegistry:
    found = CollectorRegistry()
    Counter("mxjob_example_total", "an example", registry=found).inc(3)
    return found


def test_healthz_says_ready_only_once_listed_and_metrics_always() -> None:
    listed = threading.Event()
    status, _, body = probes.answer("/healthz", registry(), listed.is_set)
    assert (status, body) == (503, b"not listed yet\n")
    listed.set()
    assert probes.answer("/healthz", registry(), listed.is_set)[:3:2] == (200, b"ok\n")
    status, content_type, body = probes.answer("/metrics", registry(), listed.is_set)
    assert status == 200
    assert content_type.startswith(b"text/plain")
    assert b"mxjob_example_total 3.0" in body
    assert probes.answer("/other", registry(), listed.is_set)[0] == 404


def test_each_server_bounds_its_own_waiting_connections() -> None:
    one, other = probes.protocol(2), probes.protocol()
    assert (one.max_waiting, other.max_waiting) == (2, probes.MAX_WAITING)
    assert one.waiting is not other.waiting
    assert (one.head_seconds, one.send_seconds) == (probes.HEAD_SECONDS, probes.SEND_SECONDS)


def test_the_server_answers_on_the_port_it_yields() -> None:
    listed = threading.Event()
    with (
        probes.serving("127.0.0.1", 0, registry(), listed.is_set) as port,
        httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client,
    ):
        assert client.get("/healthz").status_code == 503
        listed.set()
        assert client.get("/healthz").text == "ok\n"
        metrics = client.get("/metrics")
    assert metrics.status_code == 200
    assert "mxjob_example_total 3.0" in metrics.text


def test_the_ttl_controller_without_credentials_exits_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The command configures the process's logging (JSON lines at its level): recorded here,
    # not applied, so that the other tests in this process keep their loggers.
    configured: list[dict[str, Any]] = []
    monkeypatch.setattr(logging.config, "dictConfig", configured.append)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert components.ttl_controller("127.0.0.1", 0, "ERROR") == 2
    assert configured == [jsonlog.config("ERROR")]
