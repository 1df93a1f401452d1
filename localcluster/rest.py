"""Plain HTTPS calls to the loopback kube-apiserver: get, list, watch, create, patch, delete.

For what is done many times a second (polling, playing the kubelet, the end-to-end bench): a
kubectl process per call would cost more CPU than the stack under test. On httpx with the API
server's CA and bearer token (`apiserver.py` `ApiServer`). Paths are the API's own
(`/api/v1/namespaces/NS/pods`); `path()` builds them for the core and custom types.
"""

import json
import ssl
import threading
from collections.abc import Iterator
from typing import Any, Protocol

import httpx

TIMEOUT = 60.0
# A watch ends after this long on the server's side; `watch` then starts a new one unless told
# to stop, so a stopped watcher's thread ends within this time (its owner waits for it: the
# local kubelet at every job's end). Short, as a new watch on loopback costs about a
# millisecond and resumes from the last resourceVersion seen.
WATCH_SECONDS = 2
MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}
MXJOBS = "/apis/kubeflow.org/v1"


class Server(Protocol):
    """What the client needs of a running API server (`apiserver.py` ApiServer)."""

    @property
    def url(self) -> str: ...
    @property
    def token(self) -> str: ...
    @property
    def ca_cert(self) -> Any: ...


class KubeError(RuntimeError):
    """The API server answered with an error; carries its status code and message."""

    def __init__(self, response: httpx.Response) -> None:
        self.status_code = response.status_code
        super().__init__(
            f"{response.request.method} {response.request.url.path}: "
            f"{response.status_code} {response.text[:2000]}"
        )


def path(resource: str, namespace: str | None = None, name: str | None = None) -> str:
    """`/api/v1/namespaces/NS/pods/NAME` for `pods`, `services`, `configmaps`, `namespaces`;
    `/apis/kubeflow.org/v1/...` for `mxjobs`."""
    base = MXJOBS if resource == "mxjobs" else "/api/v1"
    parts = [base]
    if namespace is not None:
        parts.append(f"namespaces/{namespace}")
    parts.append(resource)
    if name is not None:
        parts.append(name)
    return "/".join(parts)


class Rest:
    """One keep-alive connection pool to the API server; watches open their own streams. Close
    it (`close()`, or `with Rest(server) as rest:`): an open pool at exit is a ResourceWarning."""

    def __init__(self, server: Server, user_agent: str = "mxjob-localcluster") -> None:
        self._server = server
        self._headers = {"Authorization": f"Bearer {server.token}", "User-Agent": user_agent}
        self._tls = ssl.create_default_context(cafile=str(server.ca_cert))
        self._client = self._new_client(TIMEOUT)

    def _new_client(self, timeout: float | None) -> httpx.Client:
        return httpx.Client(
            base_url=self._server.url,
            headers=self._headers,
            verify=self._tls,
            timeout=httpx.Timeout(TIMEOUT, read=timeout),
            trust_env=False,
        )

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "Rest":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _check(self, response: httpx.Response) -> dict[str, Any]:
        if response.status_code >= 400:
            raise KubeError(response)
        document: dict[str, Any] = response.json()
        return document

    def get(self, url: str) -> dict[str, Any]:
        return self._check(self._client.get(url))

    def list(self, url: str) -> tuple[list[dict[str, Any]], str]:
        """The items and the list's resourceVersion (where a watch should start)."""
        document = self.get(url)
        return list(document.get("items") or []), str(document["metadata"]["resourceVersion"])

    def create(self, url: str, document: dict[str, Any]) -> dict[str, Any]:
        return self._check(self._client.post(url, json=document))

    def merge_patch(self, url: str, patch: dict[str, Any]) -> dict[str, Any]:
        return self._check(self._client.patch(url, content=json.dumps(patch), headers=MERGE_PATCH))

    def delete(self, url: str) -> None:
        response = self._client.delete(url)
        if response.status_code not in (200, 202, 404):
            raise KubeError(response)

    def watch(
        self, url: str, resource_version: str, stop: threading.Event
    ) -> Iterator[dict[str, Any]]:
        """Watch events (`{"type": ..., "object": ...}`) from `resource_version` on, until `stop`
        is set (seen between events, and at least every WATCH_SECONDS)."""
        params = {"watch": "true", "allowWatchBookmarks": "true"}
        with self._new_client(WATCH_SECONDS + 30) as client:
            while not stop.is_set():
                query = params | {
                    "resourceVersion": resource_version,
                    "timeoutSeconds": str(WATCH_SECONDS),
                }
                with client.stream("GET", url, params=query) as response:
                    if response.status_code >= 400:
                        response.read()
                        raise KubeError(response)
                    for line in response.iter_lines():
                        if stop.is_set():
                            return
                        if not line:
                            continue
                        event: dict[str, Any] = json.loads(line)
                        if event["type"] == "ERROR":
                            raise RuntimeError(f"watch {url}: {event['object']}")
                        resource_version = event["object"]["metadata"]["resourceVersion"]
                        if event["type"] != "BOOKMARK":
                            yield event
