"""The end-to-end bench's tables: each scenario under each setting, ours as shipped beside
training-operator, and the fleet at rest."""

from collections.abc import Callable

from scripts.bench.controllers import TRAINING_OPERATOR
from scripts.bench.e2e.figures import Measure, children, cpu, running_after, succeeded_after
from scripts.bench.fleet import Idle, at, cluster_wide, slope
from scripts.bench.report import table

COLUMNS: tuple[tuple[str, Callable[[Measure], str]], ...] = (
    ("all pods, s", lambda m: f"{m.at['pods']:.1f}"),
    ("all pods and Services, s", lambda m: f"{children(m):.1f}"),
    ("first condition, s", lambda m: f"{m.at['condition']:.1f}"),
    ("Running after the last pod runs, s", lambda m: f"{running_after(m):.2f}"),
    (
        "Metacontroller (or training-operator) CPU per job, s",
        lambda m: f"{m.per_job(m.cpu_metacontroller):.2f}",
    ),
    ("hook CPU per job, s", lambda m: f"{m.per_job(m.cpu_hook):.2f}" if m.ours else "-"),
    ("API requests per job", lambda m: f"{m.per_job(sum(m.requests.values())):,.0f}"),
    (
        "of which create / patch / update",
        lambda m: " / ".join(
            f"{m.per_job(m.requests[v]):,.0f}" for v in ("create", "patch", "update")
        ),
    ),
    ("hook calls per job", lambda m: f"{m.per_job(m.syncs):,.0f}" if m.ours else "-"),
    ("controller peak RSS, MiB", lambda m: f"{m.peak:,.0f}"),
)


def results_table(measures: list[Measure]) -> list[str]:
    """One row per scenario and setting: times from `kubectl apply` (the first condition and
    all children: of every job), CPU and requests per job."""
    header = ["scenario", "controller", *(label for label, _ in COLUMNS)]
    rows = [[m.scenario.name, m.setting.name, *(cell(m) for _, cell in COLUMNS)] for m in measures]
    return table(header, rows)


# The side by side, ours as shipped against training-operator: (figure, value, unit, digits).
SIDE: tuple[tuple[str, Callable[[Measure], float | None], str, int], ...] = (
    ("apply → all pods and Services", children, "s", 2),
    ("apply → first condition", lambda m: m.at["condition"], "s", 2),
    ("last pod Running → Running=True", running_after, "s", 3),
    ("Scheduler exit 0 → Succeeded=True",
     lambda m: succeeded_after(m) if m.scenario.life else None, "s", 3),
    ("controller CPU per job (ours: Metacontroller + hook)", lambda m: m.per_job(cpu(m)), "s", 2),
    ("of which the hook", lambda m: m.per_job(m.cpu_hook) if m.ours else None, "s", 2),
    ("controller peak RSS (ours: Metacontroller + hook)", lambda m: m.peak, "MiB", 0),
    ("of which Metacontroller", lambda m: m.memory["Metacontroller"][0] if m.ours else None,
     "MiB", 0),
    ("of which the hook", lambda m: m.memory["hook"][0] if m.ours else None, "MiB", 0),
    ("controller RSS at the end", lambda m: m.rss, "MiB", 0),
    ("Go heap in use at the end (Metacontroller / training-operator)",
     lambda m: m.go.get("heap"), "MiB", 0),
    ("API requests per job", lambda m: m.per_job(sum(m.requests.values())), "", 0),
)  # fmt: skip


def pairs(measures: list[Measure]) -> list[tuple[Measure, Measure]]:
    """(ours as shipped, training-operator) for each scenario measured under both."""
    theirs = {m.scenario.name: m for m in measures if not m.ours}
    return [
        (m, theirs[m.scenario.name])
        for m in measures
        if m.setting.name == "shipped" and m.scenario.name in theirs
    ]


def ratio(ours: float | None, theirs: float | None) -> str:
    """Ours as a multiple of theirs; "-" where either is missing or theirs is 0 (a short window
    at rest can read 0.000 s of CPU)."""
    if ours is None or theirs is None or theirs == 0:
        return "-"
    return f"{ours / theirs:.2f}x"


def number(value: float | None, unit: str, digits: int) -> str:
    return "-" if value is None else f"{value:,.{digits}f} {unit}".strip()


def side_by_side(measures: list[Measure]) -> list[str]:
    rows = []
    for ours, theirs in pairs(measures):
        for label, figure, unit, digits in SIDE:
            a, b = figure(ours), figure(theirs)
            if a is None and b is None:
                continue
            rows.append([f"{ours.scenario.name}: {label}", number(b, unit, digits),
                         number(a, unit, digits), ratio(a, b)])  # fmt: skip
    return table(["figure", TRAINING_OPERATOR, "ours (shipped)", "ours / training-operator"], rows)


IDLE: tuple[tuple[str, Callable[[Idle], float], int], ...] = (
    ("controller CPU, s per minute", lambda i: i.cpu, 3),
    ("hook calls per minute", lambda i: i.hook_calls, 1),
    ("API requests per minute on jobs and children", lambda i: i.requests, 1),
    ("cluster-wide API requests per minute", lambda i: i.cluster_requests, 1),
)


def at_rest_table(idles: list[Idle], shape: str) -> list[str]:
    """Each controller's idle windows by fleet size, the slope per job and 1,000 jobs."""
    names = list(dict.fromkeys(i.setting.name for i in idles))
    rows = []
    for name in names:
        mine = [i for i in idles if i.setting.name == name]
        for idle in mine:
            rows.append([name, f"{idle.jobs}", *(f"{idle.per_minute(v(idle)):,.{d}f}"
                         for _, v, d in IDLE), f"{idle.rss_mib:,.0f}"])  # fmt: skip
        # Cluster-wide requests do not grow with the jobs: their mean, not a slope.
        slopes = [f"{slope(mine, v):,.{d + 2}f}" for _, v, d in IDLE[:-1]]
        rows.append([name, "each job adds (slope)", *slopes, "-", "-"])
        rows.append([name, "1,000 jobs (extrapolated; cluster-wide: the mean)",
                     *(f"{at(mine, 1000, v):,.{d}f}" for _, v, d in IDLE[:-1]),
                     f"{cluster_wide(mine):,.1f}", "-"])  # fmt: skip
    header = ["controller", f"running {shape} jobs", *(label for label, _, _ in IDLE),
              "controller RSS, MiB"]  # fmt: skip
    return table(header, rows)
