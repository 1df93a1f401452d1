"""Helpers shared by the test tiers: builders of jobs and sync requests, the golden cases, the
servers, the simulated cluster, the CRD's admission, kustomize and the Go tools."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
