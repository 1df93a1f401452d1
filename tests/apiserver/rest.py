"""Plain HTTPS calls to the API server, for what tests do many times a second (polling, playing
the kubelet): a kubectl process per poll would cost more CPU than the stack under test."""

import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from .cluster import ApiServer

TIMEOUT = 30
MERGE_PATCH = "application/merge-patch+json"


@dataclass
class Rest:
    """The API server's REST API with the admin token."""

    server: ApiServer
    _context: ssl.SSLContext | None = field(default=None, repr=False)

    def get(self, path: str) -> dict[str, Any]:
        """GET `path` (e.g. `/api/v1/namespaces/x/pods`), parsed."""
        return self._call("GET", path)

    def find(self, path: str) -> dict[str, Any] | None:
        """GET `path`, or None if it does not exist."""
        try:
            return self.get(path)
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise

    def merge_patch(self, path: str, patch: dict[str, Any]) -> dict[str, Any]:
        """PATCH `path` with a JSON merge patch."""
        return self._call("PATCH", path, json.dumps(patch).encode(), MERGE_PATCH)

    def _call(
        self, method: str, path: str, body: bytes | None = None, content_type: str = ""
    ) -> dict[str, Any]:
        request = urllib.request.Request(f"{self.server.url}{path}", data=body, method=method)
        request.add_header("Authorization", f"Bearer {self.server.token}")
        if content_type:
            request.add_header("Content-Type", content_type)
        with urllib.request.urlopen(request, timeout=TIMEOUT, context=self.context()) as answer:
            document: dict[str, Any] = json.load(answer)
            return document

    def context(self) -> ssl.SSLContext:
        if self._context is None:
            self._context = ssl.create_default_context(cafile=str(self.server.ca_cert))
        return self._context
