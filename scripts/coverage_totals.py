"""Print app/'s line and branch coverage apart from the `coverage json` report on stdin
(`coverage report` prints them only combined): `make coverage` ends with it."""

import json
import sys


def totals(report: dict[str, dict[str, int]]) -> str:
    t = report["totals"]
    lines = 100 * t["covered_lines"] / t["num_statements"]
    branches = 100 * t["covered_branches"] / t["num_branches"]
    return (
        f"app/: lines {lines:.2f}% ({t['covered_lines']}/{t['num_statements']}), "
        f"branches {branches:.2f}% ({t['covered_branches']}/{t['num_branches']})"
    )


if __name__ == "__main__":
    print(totals(json.load(sys.stdin)))
