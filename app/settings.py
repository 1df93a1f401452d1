"""The service's settings, read from the environment once at start-up."""

import os
from collections.abc import Mapping
from datetime import datetime

from pydantic import BaseModel, field_validator

PREFIX = "MXJOB_"


class Settings(BaseModel):
    # Answer as if it were this moment (RFC 3339). For tests and for reproducing a golden
    # answer with curl; never set it in a cluster, where deadlines and TTLs need the clock.
    frozen_clock: datetime | None = None

    @field_validator("frozen_clock")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("needs a time zone, e.g. 2026-11-22T12:00:00Z")
        return value


def from_env(environ: Mapping[str, str] = os.environ) -> Settings:
    fields = {
        name: environ[PREFIX + name.upper()]
        for name in Settings.model_fields
        if PREFIX + name.upper() in environ
    }
    return Settings.model_validate(fields)
