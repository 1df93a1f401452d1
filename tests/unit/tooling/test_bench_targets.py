"""The end-to-end bench's tables read a rival's figure of 0 without dividing by it: a 10 s
window at rest can measure training-operator at 0.000 s of CPU."""

from scripts.bench.controllers import TRAINING_OPERATOR
from scripts.bench.e2e.tables import ratio
from scripts.bench.e2e.targets import at_rest_targets
from scripts.bench.fleet import Idle
from scripts.bench.workloads import Setting


def idle(name: str, cpu: float) -> Idle:
    return Idle(Setting(name, ()), jobs=1, seconds=10, cpu=cpu, hook_calls=0, requests=0,
                cluster_requests=0, rss_mib=90)  # fmt: skip


def test_a_ratio_to_a_missing_or_zero_figure_is_a_dash() -> None:
    assert ratio(0.12, 0.0) == "-"
    assert ratio(None, 1.0) == "-"
    assert ratio(0.3, 0.1) == "3.00x"


def test_a_rival_at_zero_cpu_gives_a_row_not_a_traceback() -> None:
    rows = at_rest_targets([idle("shipped", 0.02), idle(TRAINING_OPERATOR, 0.0)])
    cpu = {r[0]: r for r in rows}
    (fleet,) = [r for what, r in cpu.items() if what.startswith("a fleet of 1 running jobs")]
    assert fleet[1] == "0.120 s vs 0.000 s = -", fleet
    assert fleet[2] == "**not met**", fleet
    assert cpu["at rest: 0 hook calls"][2] == "**met**"
