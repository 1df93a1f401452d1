"""The real server under a mix of every hostile and careless client at once: it stays within
512 MiB, keeps answering /healthz and small syncs, and answers a large sync again after."""

import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from functools import partial
from typing import Any

import httpx
import orjson
import yaml

from app.core.validate.costs import MiB
from tests.support import REPO
from tests.support.hostile import (
    LIMIT_KIB,
    NEW_JOB,
    drip,
    head,
    hook,
    new_job,
    running,
    status_of,
    unread_answer,
)
from tests.support.servers import Server, wait_for


class Mix:
    """Hostile and careless clients at once, each kind in its own threads."""

    def __init__(self, server: Server) -> None:
        self.server, self.threads, self.results = server, [], []  # type: ignore[var-annotated]
        self.stop = threading.Event()

    def start(self, count: int, client: Callable[[], Any]) -> None:
        for _ in range(count):
            thread = threading.Thread(target=lambda: self.results.append(client()))
            thread.start()
            self.threads.append(thread)

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.1, deadline - time.monotonic()))
        assert not any(t.is_alive() for t in self.threads), "a client did not finish"


def big_upload(server: Server, body: bytes) -> int:
    """POST a body of just under 8 MiB; the status, or 0 if the server closed first."""
    with server.connect() as sock:
        try:
            sock.sendall(head(len(body)) + body)
            answer = sock.recv(64)
        except (ConnectionResetError, BrokenPipeError):
            return 0
        while len(answer) < 12 and (more := sock.recv(64)):
            answer += more
        return status_of(answer)


def readiness_probe() -> tuple[float, int]:
    """The Deployment's readiness probe: its timeout (Kubernetes' default, 1 s, when unset) and
    how many probes in a row must fail before the pod is unready (default 3)."""
    deployment = yaml.safe_load((REPO / "manifests" / "base" / "deployment.yaml").read_text())
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    probe = container["readinessProbe"]
    return float(probe.get("timeoutSeconds", 1)), int(probe.get("failureThreshold", 3))


def slow_body(server: Server, declared: int) -> int:
    """Declare a body of `declared` bytes and send a byte of it every half second: the
    status the server answers once the read deadline passes (0 if it only closed)."""
    with server.connect() as sock:
        sock.sendall(head(declared))
        _, answer = drip(sock, b"{" * 100, every=0.5, timeout=20)
    return status_of(answer)


def start_the_mix(server: Server, stack: ExitStack, body: bytes) -> tuple[Mix, Mix]:
    """Open the idle and slow-head connections, start the slow bodies, then the rush of big
    uploads, the unread answers and the clients that leave; the big uploads' and the slow
    bodies' threads."""
    mix, slow = Mix(server), Mix(server)
    for _ in range(20):
        stack.enter_context(server.connect())
    for _ in range(10):
        stack.enter_context(server.connect()).sendall(b"GET /healthz HTTP/1.1\r\n")
    for declared in [len(body)] * 3 + [len(NEW_JOB)] * 5:
        slow.start(1, partial(slow_body, server, declared))
    time.sleep(0.2)  # the slow bodies hold their bytes before the rush
    mix.start(128, lambda: big_upload(server, body))
    for _ in range(2):
        stack.enter_context(unread_answer(server, new_job(1000)))
    for _ in range(8):
        with server.connect() as leaving:
            leaving.sendall(head(len(NEW_JOB)) + NEW_JOB[:100])
    return mix, slow


def answered_meanwhile(server: Server, *mixes: Mix) -> tuple[list[float], list[float]]:
    """While the mixes' clients run, /healthz and a small sync back to back, each answered:
    the seconds each /healthz and each small sync took."""
    health, small = [], []
    while any(t.is_alive() for mix in mixes for t in mix.threads):
        started = time.monotonic()
        assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
        health.append(time.monotonic() - started)
        started = time.monotonic()
        assert httpx.post(f"{server.url}/sync", content=NEW_JOB, timeout=5).status_code == 200
        small.append(time.monotonic() - started)
    return health, small


def unready_runs(missed: list[bool], failures: int) -> list[bool]:
    """For each run of `failures` probes in a row, whether all missed. Unready takes that
    many (Kubernetes probes every periodSeconds; the test back to back, which only makes a
    run of slow ones likelier)."""
    return [all(missed[i : i + failures]) for i in range(len(missed) - failures + 1)]


def test_under_a_mix_of_all_the_hook_stays_within_512_mib_and_answers() -> None:
    """128 bodies of 7.8 MiB at once (1 GiB in all; at least one gets its 200, those over
    the byte budget 429, or 503 once queued past the webhook timeout), two clients not
    reading 21 MiB answers, 20 idle and 10 slow-head connections, 8 clients that leave, and
    8 slow-body clients (a byte every half second; 3 of them declaring 7.8 MiB, which they
    hold in the budget), each answered 408 at the read deadline (8 s). Meanwhile small syncs
    and /healthz keep being answered, never as many /healthz in a row over the readiness
    probe's timeout as would make the pod unready (its failureThreshold), the server's peak RSS (VmHWM) stays within 512 MiB, and once the unread answers are cut
    a 7.8 MiB sync is answered again. Default settings but the send timeout (2 s instead
    of 10, to keep the test short)."""
    body = running(400)
    assert 7.5 * MiB < len(body) < 8 * MiB
    probe_timeout, failures = readiness_probe()
    with hook(MXJOB_SEND_TIMEOUT_SECONDS="2") as server, ExitStack() as stack:
        mix, slow = start_the_mix(server, stack, body)
        health, small = answered_meanwhile(server, mix, slow)
        mix.join(30)
        slow.join(5)

        def cut() -> bool:
            return server.metric("mxjob_connections_closed_total", reason="send_timeout") == 2

        wait_for(cut, 20, "the two unread answers cut")
        assert httpx.post(f"{server.url}/sync", content=body, timeout=10).status_code == 200
        peak = server.memory_kib("VmHWM")
        server.stop()
        lines = [orjson.loads(line) for line in server.log_lines()]
    statuses = {status: mix.results.count(status) for status in set(mix.results)}
    missed = [seconds >= probe_timeout for seconds in health]
    runs = unready_runs(missed, failures)
    health.sort()
    print(f"\nmix: peak RSS {peak // 1024} MiB, answers {statuses}, slow bodies {slow.results},")
    print(f"{len(health)} probes: /healthz median {health[len(health) // 2]:.3f} s, ", end="")
    print(f"slowest {health[-1]:.3f} s (probe timeout {probe_timeout:g} s); ", end="")
    print(f"small sync slowest {max(small):.3f} s")
    assert set(statuses) <= {0, 200, 429, 503}
    assert statuses.get(200, 0) >= 1, "no big body got its 200"
    assert slow.results == [408] * 8
    assert not any(runs), f"{failures} probes in a row over {probe_timeout:g} s: {missed}"
    assert [line["message"] for line in lines if line["level"] == "error"] == []
    assert peak < LIMIT_KIB, f"peak RSS {peak // 1024} MiB"
