"""The service's settings, read from the environment once at start-up."""

import os
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from app.core.validate.costs import MiB
from app.service import settingfiles
from app.service.errors import SettingsError

PREFIX = "MXJOB_"
# The key of a field's json_schema_extra that says what its unset default (None) means.
UNSET = "unset"


class Settings(BaseModel):
    """Each field is the variable MXJOB_<NAME>; its description and default are what
    `serve --help` lists."""

    # For tests and for reproducing a golden answer with curl; never set it in a cluster, where
    # deadlines and TTLs need the clock.
    frozen_clock: datetime | None = Field(
        default=None,
        description="answer as if it were this moment (for tests; never in a cluster)",
        json_schema_extra={UNSET: "the system clock"},
    )
    # Validation admits only jobs whose sync request, once every child exists, is estimated at
    # no more than 48 MiB (app/core/validate/sizerule.py, the size rule; docs/reliability.md has
    # the sizes measured). The rest is headroom for what others add to children.
    max_body_bytes: int = Field(
        default=64 * MiB,
        gt=0,
        description="largest request body accepted; a larger one gets 413 before it is read",
    )
    # Metacontroller gives up at its webhook timeout, 10 s by default.
    slow_sync_seconds: float = Field(
        default=2.0, gt=0, description="a sync that takes longer is logged as a warning"
    )
    # The file (a mounted Secret) is read again whenever it changes, so a rotated Secret needs
    # no restart.
    auth_token: SecretStr | None = Field(
        default=None,
        description="bearer token that /sync requires",
        json_schema_extra={UNSET: "no token required, unless MXJOB_AUTH_TOKEN_FILE is set"},
    )
    auth_token_file: Path | None = Field(
        default=None,
        description="file holding that token (a mounted Secret), read again when it changes",
        json_schema_extra={UNSET: "no token required, unless MXJOB_AUTH_TOKEN is set"},
    )
    tls_cert_file: Path | None = Field(
        default=None,
        description="serve HTTPS with this PEM certificate chain (and MXJOB_TLS_KEY_FILE)",
        json_schema_extra={UNSET: "plain HTTP"},
    )
    tls_key_file: Path | None = Field(
        default=None,
        description="the unencrypted PEM private key of MXJOB_TLS_CERT_FILE's certificate",
        json_schema_extra={UNSET: "plain HTTP"},
    )
    log_level: str = Field(
        default="INFO",
        description="level of the JSON log lines: DEBUG, INFO, WARNING, ERROR or CRITICAL",
    )
    # The CompositeController's `timeout`: nobody waits for an answer after it.
    webhook_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description="Metacontroller's webhook timeout: work still queued after it is dropped, "
        "and the read and send deadlines default to fractions of it",
    )
    # Idle and slow-header connections hold no slot.
    header_timeout_seconds: float = Field(
        default=5.0,
        gt=0,
        description="a connection that sends no whole request head this soon after it opens "
        "or after its previous answer is closed",
    )
    read_chunk_timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        description="longest gap while a body arrives, else 408",
        json_schema_extra={UNSET: "a fifth of MXJOB_WEBHOOK_TIMEOUT_SECONDS"},
    )
    read_timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        description="a whole body must arrive this soon after its request head, else 408",
        json_schema_extra={UNSET: "four fifths of MXJOB_WEBHOOK_TIMEOUT_SECONDS"},
    )
    # The connection is cut and the answer's memory freed.
    send_timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        description="an answer not taken this soon after its first byte is dropped",
        json_schema_extra={UNSET: "MXJOB_WEBHOOK_TIMEOUT_SECONDS"},
    )
    # Its default lets one request of the largest size always fit (docs/reliability.md).
    bytes_in_flight: int | None = Field(
        default=None,
        gt=0,
        description="bytes of request bodies and answers held at once; a request that does not "
        "fit gets 429 (or, if large, waits until its deadline, then 503)",
        json_schema_extra={UNSET: "MXJOB_MAX_BODY_BYTES"},
    )
    # uvicorn's limit_concurrency. Each costs at most ~80 KiB of buffers (16 KiB of head, 64 KiB
    # of body before reading pauses).
    max_connections: int = Field(
        default=256, gt=0, description="open connections; a request on one more gets 503"
    )
    # h11 is the stack of earlier versions (same deadlines and limits): a way back without a new
    # image should the C stack misbehave.
    http: Literal["httptools", "h11"] = Field(
        default="httptools",
        description="HTTP parser and event loop: httptools on uvloop (C), or h11 on asyncio "
        "(pure Python)",
    )

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

    @field_validator("auth_token_file", "tls_cert_file", "tls_key_file")
    @classmethod
    def _readable(cls, value: Path | None) -> Path | None:
        # Each is read at start-up: say which one is missing before uvicorn or ssl does.
        if value is not None and not (value.is_file() and os.access(value, os.R_OK)):
            raise ValueError("must be a readable file")
        return value

    @field_validator("auth_token_file")
    @classmethod
    def _holds_a_token(cls, value: Path | None) -> Path | None:
        return _checked(value, settingfiles.token_problem)

    @field_validator("tls_cert_file")
    @classmethod
    def _pem_chain(cls, value: Path | None) -> Path | None:
        return _checked(value, settingfiles.certificate_problem)

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
        if self.tls_cert_file is not None and self.tls_key_file is not None:
            problem = settingfiles.key_problem(self.tls_cert_file, self.tls_key_file)
            if problem:
                raise ValueError(
                    f"{variable('tls_key_file')}={str(self.tls_key_file)!r}: {problem}"
                )
        if self.bytes_in_flight is not None and self.bytes_in_flight < self.max_body_bytes:
            raise ValueError("MXJOB_BYTES_IN_FLIGHT must be at least MXJOB_MAX_BODY_BYTES")
        return self

    @property
    def read_chunk_seconds(self) -> float:
        return self.read_chunk_timeout_seconds or self.webhook_timeout_seconds / 5

    @property
    def read_seconds(self) -> float:
        return self.read_timeout_seconds or self.webhook_timeout_seconds * 4 / 5

    @property
    def send_seconds(self) -> float:
        return self.send_timeout_seconds or self.webhook_timeout_seconds

    @property
    def budget_bytes(self) -> int:
        return self.bytes_in_flight or self.max_body_bytes


# What each type of setting allows, as a user reads it.
_KINDS: dict[Any, str] = {
    int: "an integer",
    float: "a number",
    datetime: "an RFC 3339 time with a time zone, e.g. 2026-11-22T12:00:00Z",
    Path: "a file's path",
    SecretStr: "a token",
    str: "a string",
}


def from_env(environ: Mapping[str, str] = os.environ) -> Settings:
    """The settings from MXJOB_* variables, or SettingsError naming each variable in error."""
    fields = {
        name: environ[variable(name)] for name in Settings.model_fields if variable(name) in environ
    }
    try:
        return Settings.model_validate(fields)
    except ValidationError as err:
        raise SettingsError("\n".join(_line(e, fields) for e in err.errors())) from None


def variable(name: str) -> str:
    """The environment variable of the setting `name`."""
    return PREFIX + name.upper()


def allowed(name: str) -> str:
    """What the setting `name` allows, e.g. "an integer greater than 0"."""
    info = Settings.model_fields[name]
    kind = info.annotation
    if get_origin(kind) in (Union, UnionType):  # optional: unset is its default
        (kind,) = [a for a in get_args(kind) if a is not NoneType]
    if get_origin(kind) is Literal:
        return "one of " + ", ".join(get_args(kind))
    bounds = [f" greater than {m.gt}" for m in info.metadata if hasattr(m, "gt")]
    return _KINDS[kind] + "".join(bounds)


def _line(error: ErrorDetails, fields: dict[str, str]) -> str:
    if not error["loc"]:  # a rule over several settings: its message names them
        return str(error["msg"]).removeprefix("Value error, ")
    name = str(error["loc"][0])
    shown = "(hidden)" if name == "auth_token" else repr(fields[name])
    rule = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] != "value_error":  # pydantic's own check: say the range instead
        rule = f"must be {allowed(name)}"
    return f"{variable(name)}={shown}: {rule}"


def default(name: str) -> str:
    """The default of the setting `name` as `serve --help` shows it, e.g. "2" or "plain HTTP"."""
    info = Settings.model_fields[name]
    if info.default is None:
        extra = info.json_schema_extra
        assert isinstance(extra, dict), f"{name} says nowhere what its unset default means"
        return str(extra[UNSET])
    if isinstance(info.default, float):
        return f"{info.default:g}"
    if isinstance(info.default, int) and info.default % MiB == 0:
        return f"{info.default} ({info.default // MiB} MiB)"
    return str(info.default)


def _checked(value: Path | None, problem: Callable[[Path], str | None]) -> Path | None:
    found = None if value is None else problem(value)
    if found:
        raise ValueError(found)
    return value
