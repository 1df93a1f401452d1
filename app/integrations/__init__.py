"""Guests of the core: Kueue, gang schedulers and Events, each independent of the others."""

from app.core.model.seam import Join
from app.integrations import events, gang, kueue

# What joins a sync of a valid job at the seam (app/core/model/seam.py), in the answer's order. The
# gang scheduler goes first: the first pods Kueue reads are already in the job's group.
AT_THE_SEAM: tuple[Join, ...] = (gang.join, kueue.join, events.join)
