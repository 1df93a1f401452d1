"""Optional bearer-token check of the hook's caller, compared in constant time."""

import hashlib
import hmac
import logging
import os
from pathlib import Path

from app.service.settings import Settings

log = logging.getLogger("mxjob.auth")


class BearerToken:
    """The token /sync requires, from the environment or from a file (a mounted Secret),
    which is read again when it changes so that a rotated Secret takes effect by itself."""

    def __init__(self, settings: Settings) -> None:
        self._file = settings.auth_token_file
        self._stamp: tuple[int, int] | None = None
        self._digest: bytes | None = None
        if settings.auth_token is not None:
            self._digest = _digest(settings.auth_token.get_secret_value())
        elif self._file is not None:
            self._digest = _digest(_read(self._file))
            self._stamp = _stamp(self._file)

    @property
    def enabled(self) -> bool:
        return self._digest is not None

    def allows(self, authorization: str | None) -> bool:
        """Whether an `Authorization` header value carries the token (always, when off)."""
        expected = self._current()
        if expected is None:
            return True
        scheme, _, given = (authorization or "").strip().partition(" ")
        # Hashing first makes the comparison independent of the given token's length too.
        same = hmac.compare_digest(_digest(given.strip()), expected)
        return same and scheme.lower() == "bearer"

    def _current(self) -> bytes | None:
        if self._file is None:
            return self._digest
        try:
            stamp = _stamp(self._file)
            if stamp != self._stamp:
                self._digest, self._stamp = _digest(_read(self._file)), stamp
        except (OSError, ValueError) as err:
            # Keep the last good token: a Secret being swapped must not open the door.
            log.error("cannot read the auth token file; keeping the previous token: %s", err)
        return self._digest


def _read(path: Path) -> str:
    token = path.read_text().strip()
    if not token:
        raise ValueError(f"{path} is empty")
    return token


def _stamp(path: Path) -> tuple[int, int]:
    info = os.stat(path)
    return info.st_ino, info.st_mtime_ns


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()
