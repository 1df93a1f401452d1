"""The end-to-end bench's targets, ours as shipped against training-operator measured in the
same run: met or not."""

from scripts.bench.controllers import TRAINING_OPERATOR
from scripts.bench.e2e.figures import Measure, children, cpu, running_after, succeeded_after
from scripts.bench.e2e.tables import pairs, ratio
from scripts.bench.fleet import Idle, at, cluster_wide, requests_at
from scripts.bench.report import table

Row = list[str]


def row(what: str, figure: str, met: bool) -> Row:
    return [what, figure, "**met**" if met else "**not met**"]


def latency_targets(measures: list[Measure]) -> list[Row]:
    """How soon ours as shipped reports a condition and makes a job's children."""
    rows = []
    by = {(m.scenario.name, m.setting.name): m for m in measures}
    for name, limit in (("typical 1/16/64", 0.05), ("large 1/100/1000", 0.4)):
        m = by.get((name, "shipped"))
        if m is None:
            continue
        rows.append(
            row(
                f"{name}: last pod Running → Running=True ≤ {limit * 1000:.0f} ms",
                f"{running_after(m) * 1000:,.0f} ms",
                running_after(m) <= limit,
            )
        )
        if m.scenario.life:
            rows.append(
                row(
                    f"{name}: Scheduler exit 0 → Succeeded=True ≤ {limit * 1000:.0f} ms",
                    f"{succeeded_after(m) * 1000:,.0f} ms",
                    succeeded_after(m) <= limit,
                )
            )
    large = by.get(("large 1/100/1000", "shipped"))
    if large is not None:
        rows.append(
            row(
                "large 1/100/1000: a condition (`Created`) ≤ 1 s after `kubectl apply`",
                f"{large.at['condition']:.2f} s",
                large.at["condition"] <= 1,
            )
        )
        rows.append(
            row(
                "large 1/100/1000: all 2,202 children ≤ 60 s",
                f"{children(large):.1f} s",
                children(large) <= 60,
            )
        )
    return rows


def rival_targets(measures: list[Measure]) -> list[Row]:
    """Ours as shipped against training-operator in the same scenario: CPU and children."""
    rows = []
    for ours, theirs in pairs(measures):
        cap = {"typical 1/16/64": 1.5, "large 1/100/1000": 1.0}.get(ours.scenario.name)
        if cap is None:
            continue
        a, b = ours.per_job(cpu(ours)), theirs.per_job(cpu(theirs))
        rows.append(
            row(
                f"{ours.scenario.name}: controller CPU per job ≤ {cap}x training-operator's",
                f"{a:.2f} s vs {b:.2f} s = {ratio(a, b)}",
                a <= cap * b,
            )
        )
        if ours.scenario.name == "typical 1/16/64":
            rows.append(
                row(
                    "typical 1/16/64: all children no later than training-operator's",
                    f"{children(ours):.2f} s vs {children(theirs):.2f} s",
                    children(ours) <= children(theirs),
                )
            )
    return rows


def at_rest_targets(idles: list[Idle]) -> list[Row]:
    """A fleet at rest: CPU against training-operator's, no hook call, few requests."""
    rows = []
    ours_idle = [i for i in idles if i.setting.name == "shipped"]
    theirs_idle = [i for i in idles if i.setting.name == TRAINING_OPERATOR]
    if ours_idle and theirs_idle:
        top = ours_idle[-1].jobs
        a, b = (x[-1].per_minute(x[-1].cpu) for x in (ours_idle, theirs_idle))
        rows.append(
            row(
                f"a fleet of {top} running jobs at rest: controller CPU a minute ≤ 2x "
                "training-operator's",
                f"{a:.3f} s vs {b:.3f} s = {ratio(a, b)}",
                a <= 2 * b,
            )
        )
        a1, b1 = (at(x, 1000, lambda i: i.cpu) for x in (ours_idle, theirs_idle))
        rows.append(
            row(
                "1,000 running jobs at rest (extrapolated): controller CPU a minute ≤ 2x "
                "training-operator's",
                f"{a1:.3f} s vs {b1:.3f} s = {ratio(a1, b1)}",
                a1 <= 2 * b1,
            )
        )
    if ours_idle:
        calls = sum(i.hook_calls for i in ours_idle)
        rows.append(
            row("at rest: 0 hook calls", f"{calls:.0f} in {len(ours_idle)} windows", calls == 0)
        )
        per_1000 = requests_at(ours_idle, 1000)
        rows.append(
            row(
                "at rest: ≤ 1 API request a minute per 100 jobs (1,000 jobs, extrapolated: ≤ 10)",
                f"{per_1000:.1f} a minute ({cluster_wide(ours_idle):.1f} of them cluster-wide)",
                per_1000 <= 10,
            )
        )
    return rows


def targets_table(measures: list[Measure], idles: list[Idle]) -> list[str]:
    """The targets, ours as shipped against training-operator measured in the same run."""
    rows = latency_targets(measures) + rival_targets(measures) + at_rest_targets(idles)
    return table(["target (ours as shipped)", "figure", "met"], rows)
