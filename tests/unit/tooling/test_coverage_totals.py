"""`make coverage` prints line and branch coverage apart, from coverage.py's JSON totals."""

from scripts.coverage_totals import totals


def test_lines_and_branches_are_said_apart() -> None:
    report = {"totals": {"covered_lines": 3518, "num_statements": 3874,
                         "covered_branches": 873, "num_branches": 1004}}  # fmt: skip
    assert totals(report) == ("app/: lines 90.81% (3518/3874), branches 86.95% (873/1004)")
