"""Unit tests of the tooling: scripts/ and localcluster/."""
