"""Guests of the core: Kueue, gang schedulers and Events, each independent of the others."""

from app.core.model.seam import Integration
from app.integrations import events, gang, kueue

# What the service hands every sync (app/core/model/seam.py), in the answer's order. The gang
# scheduler goes first: the first pods Kueue reads are already in the job's group.
INTEGRATIONS: tuple[Integration, ...] = (gang.INTEGRATION, kueue.INTEGRATION, events.INTEGRATION)
