"""Guests of the core: Kueue, gang schedulers and Events, each independent of the others."""

from app.core.seam import Join
from app.integrations import events, kueue

# What joins a sync of a valid job at the seam (app/core/seam.py), in the answer's order.
AT_THE_SEAM: tuple[Join, ...] = (kueue.join, events.join)
