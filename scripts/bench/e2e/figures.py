"""What the end-to-end bench measured of one scenario under one controller, and the figures
read from it."""

from collections import Counter
from dataclasses import dataclass, field

from scripts.bench.controllers import TRAINING_OPERATOR
from scripts.bench.workloads import Scenario, Setting


@dataclass
class Measure:
    scenario: Scenario
    setting: Setting
    at: dict[str, float]
    marked: float
    cpu_metacontroller: float
    cpu_hook: float
    requests: Counter[str]
    syncs: float
    synced: list[tuple[int, float]] = field(default_factory=list)  # hook log: bytes, ms
    memory: dict[str, tuple[float, float]] = field(default_factory=dict)  # peak, now; MiB
    go: dict[str, float] = field(default_factory=dict)  # the Go process's heap, sys; MiB

    def per_job(self, value: float) -> float:
        return value / self.scenario.jobs

    @property
    def ours(self) -> bool:
        return self.setting.name != TRAINING_OPERATOR

    @property
    def peak(self) -> float:
        return sum(peak for peak, _ in self.memory.values())

    @property
    def rss(self) -> float:
        return sum(now for _, now in self.memory.values())


def summary(m: Measure) -> str:
    at = m.at
    return (
        f"pods {at['pods']:.1f} s, all children {children(m):.1f} s, "
        f"first condition {at['condition']:.1f} s, Running {running_after(m):.2f} s "
        f"after the last pod was marked; CPU/job Metacontroller "
        f"{m.per_job(m.cpu_metacontroller):.2f} s, hook {m.per_job(m.cpu_hook):.2f} s; "
        f"{m.per_job(sum(m.requests.values())):.0f} API requests and "
        f"{m.per_job(m.syncs):.0f} syncs per job"
    )


def children(m: Measure) -> float:
    return max(m.at["pods"], m.at["services"])


def running_after(m: Measure) -> float:
    return m.at["running"] - m.marked


def succeeded_after(m: Measure) -> float:
    return m.at["succeeded"] - m.at["exited"]


def after(m: Measure, mark: str, since: str) -> float:
    return m.at[mark] - m.at[since]


def cpu(m: Measure) -> float:
    return m.cpu_metacontroller + m.cpu_hook
