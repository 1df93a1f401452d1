"""Guests of the core: Kueue, gang schedulers and Events, each independent of the others."""
