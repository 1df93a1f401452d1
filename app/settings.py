"""The service's settings, read from the environment once at start-up."""

import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator

PREFIX = "MXJOB_"
MiB = 1024 * 1024


class Settings(BaseModel):
    # Answer as if it were this moment (RFC 3339). For tests and for reproducing a golden
    # answer with curl; never set it in a cluster, where deadlines and TTLs need the clock.
    frozen_clock: datetime | None = None
    # Largest request body accepted; larger ones get 413 before they are read. Validation
    # admits only jobs whose sync request, once every child exists, is estimated at no more
    # than 48 MiB (app/validation.py, the size rule); the largest admitted measured 21.6-45.8
    # MiB through a real API server (docs/reliability.md). The rest is headroom for what
    # others add to children.
    max_body_bytes: int = Field(default=64 * MiB, gt=0)
    # A sync that takes longer than this is logged as a warning (Metacontroller gives up at
    # its webhook timeout, 10 s by default).
    slow_sync_seconds: float = Field(default=2.0, gt=0)
    # Bearer token that /sync requires; off when neither it nor the file is set. The file
    # (a mounted Secret) is read again whenever it changes, so a rotated Secret needs no
    # restart.
    auth_token: SecretStr | None = None
    auth_token_file: Path | None = None
    # Serve HTTPS with this certificate chain and key (PEM files).
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    # Python log level name for the JSON logs.
    log_level: str = "INFO"

    @field_validator("frozen_clock")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("needs a time zone, e.g. 2026-11-22T12:00:00Z")
        return value

    @field_validator("auth_token")
    @classmethod
    def _not_blank(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().strip():
            raise ValueError("is empty; unset it to turn authentication off")
        return value

    @field_validator("log_level")
    @classmethod
    def _level(cls, value: str) -> str:
        if value.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise ValueError("must be DEBUG, INFO, WARNING, ERROR or CRITICAL")
        return value.upper()

    @model_validator(mode="after")
    def _pairs(self) -> "Settings":
        if self.auth_token is not None and self.auth_token_file is not None:
            raise ValueError("set MXJOB_AUTH_TOKEN or MXJOB_AUTH_TOKEN_FILE, not both")
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError("MXJOB_TLS_CERT_FILE and MXJOB_TLS_KEY_FILE go together")
        return self

    @property
    def auth_enabled(self) -> bool:
        return self.auth_token is not None or self.auth_token_file is not None


def from_env(environ: Mapping[str, str] = os.environ) -> Settings:
    fields = {
        name: environ[PREFIX + name.upper()]
        for name in Settings.model_fields
        if PREFIX + name.upper() in environ
    }
    return Settings.model_validate(fields)
