"""The end-to-end bench's figures and its part of docs/performance.md: each scenario under each
Metacontroller setting side by side, and the targets (for the shipped setting) met or not."""

import argparse
import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from scripts.bench.controllers import TRAINING_OPERATOR
from scripts.bench.fleet import SETTLE_S, Idle, at, cluster_wide, requests_at, slope
from scripts.bench.report import machine, table
from scripts.bench.workloads import Scenario, Setting

START, END = "<!-- bench-e2e:start -->", "<!-- bench-e2e:end -->"
CONFIGMAP_START = "<!-- bench-e2e-configmap:start -->"
CONFIGMAP_END = "<!-- bench-e2e-configmap:end -->"
BEFORE = "MX_CONFIG inline, dynamic apply (0.1.0, before)"
DYNAMIC = "ConfigMap, dynamic apply"


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


def succeeded_after(m: Measure) -> float:
    return m.at["succeeded"] - m.at["exited"]


def cpu(m: Measure) -> float:
    return m.cpu_metacontroller + m.cpu_hook


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


def targets_table(measures: list[Measure], idles: list[Idle]) -> list[str]:
    """The targets, ours as shipped against training-operator measured in the same run."""
    rows: list[list[str]] = []

    def row(what: str, figure: str, met: bool) -> None:
        rows.append([what, figure, "**met**" if met else "**not met**"])

    by = {(m.scenario.name, m.setting.name): m for m in measures}
    for name, limit in (("typical 1/16/64", 0.05), ("large 1/100/1000", 0.4)):
        m = by.get((name, "shipped"))
        if m is None:
            continue
        row(f"{name}: last pod Running → Running=True ≤ {limit * 1000:.0f} ms",
            f"{running_after(m) * 1000:,.0f} ms", running_after(m) <= limit)  # fmt: skip
        if m.scenario.life:
            row(f"{name}: Scheduler exit 0 → Succeeded=True ≤ {limit * 1000:.0f} ms",
                f"{succeeded_after(m) * 1000:,.0f} ms", succeeded_after(m) <= limit)  # fmt: skip
    large = by.get(("large 1/100/1000", "shipped"))
    if large is not None:
        row("large 1/100/1000: a condition (`Created`) ≤ 1 s after `kubectl apply`",
            f"{large.at['condition']:.2f} s", large.at["condition"] <= 1)  # fmt: skip
        row("large 1/100/1000: all 2,202 children ≤ 60 s", f"{children(large):.1f} s",
            children(large) <= 60)  # fmt: skip
    for ours, theirs in pairs(measures):
        cap = {"typical 1/16/64": 1.5, "large 1/100/1000": 1.0}.get(ours.scenario.name)
        if cap is None:
            continue
        a, b = ours.per_job(cpu(ours)), theirs.per_job(cpu(theirs))
        row(f"{ours.scenario.name}: controller CPU per job ≤ {cap}x training-operator's",
            f"{a:.2f} s vs {b:.2f} s = {a / max(b, 1e-9):.2f}x", a <= cap * b)  # fmt: skip
        if ours.scenario.name == "typical 1/16/64":
            row("typical 1/16/64: all children no later than training-operator's",
                f"{children(ours):.2f} s vs {children(theirs):.2f} s",
                children(ours) <= children(theirs))  # fmt: skip
    ours_idle = [i for i in idles if i.setting.name == "shipped"]
    theirs_idle = [i for i in idles if i.setting.name == TRAINING_OPERATOR]
    if ours_idle and theirs_idle:
        top = ours_idle[-1].jobs
        a, b = (x[-1].per_minute(x[-1].cpu) for x in (ours_idle, theirs_idle))
        row(f"a fleet of {top} running jobs at rest: controller CPU a minute ≤ 2x "
            "training-operator's",
            f"{a:.3f} s vs {b:.3f} s = {a / b:.2f}x", a <= 2 * b)  # fmt: skip
        a1, b1 = (at(x, 1000, lambda i: i.cpu) for x in (ours_idle, theirs_idle))
        row("1,000 running jobs at rest (extrapolated): controller CPU a minute ≤ 2x "
            "training-operator's", f"{a1:.3f} s vs {b1:.3f} s = {a1 / max(b1, 1e-9):.2f}x",
            a1 <= 2 * b1)  # fmt: skip
    if ours_idle:
        calls = sum(i.hook_calls for i in ours_idle)
        row("at rest: 0 hook calls", f"{calls:.0f} in {len(ours_idle)} windows", calls == 0)
        per_1000 = requests_at(ours_idle, 1000)
        row("at rest: ≤ 1 API request a minute per 100 jobs (1,000 jobs, extrapolated: ≤ 10)",
            f"{per_1000:.1f} a minute ({cluster_wide(ours_idle):.1f} of them cluster-wide)",
            per_1000 <= 10)  # fmt: skip
    return table(["target (ours as shipped)", "figure", "met"], rows)


def report(
    measures: list[Measure],
    settings: list[Setting],
    idles: list[Idle],
    args: argparse.Namespace,
    seconds: float,
    load: str,
) -> str:
    lines = [
        START,
        f"Generated by `make bench-e2e` (`python -m scripts.bench.e2e {' '.join(args.argv)}`) "
        f"in {seconds:,.0f} s.",
        "",
        *machine("the controllers, etcd, kube-apiserver and the bench share them"),
        f"- load average (1 min, /proc/loadavg) during the run: {load}; the machine is shared "
        "with other work",
        "",
        "Settings: "
        + "; ".join(f"**{s.name}** `{' '.join(s.flags) or '(none)'}`" for s in settings)
        + ".",
        "",
        *targets_table(measures, idles),
        "",
    ]
    if pairs(measures):
        lines += ["Side by side, one run, one API server:", "", *side_by_side(measures), ""]
    if idles:
        lines += [
            f"At rest: each controller over running {args.fleet_shape} jobs, idle for "
            f"{args.window:.0f} s windows after {SETTLE_S:.0f} s to settle; per minute:",
            "",
            *at_rest_table(idles, args.fleet_shape),
            "",
        ]
    lines += [*results_table(measures), END]
    return "\n".join(lines)


# ------------------------------------------- `--configmap`: MX_CONFIG inline against shipped


def after(m: Measure, mark: str, since: str) -> float:
    return m.at[mark] - m.at[since]


def spread(values: list[float], unit: float, digits: int) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values) / unit:,.{digits}f} / {max(values) / unit:,.{digits}f}"


def request_mb(m: Measure) -> list[float]:
    return [float(size) for size, _ in m.synced]


# A column table like COLUMNS, of other facts (a job's whole life, row by row).
LIFE: tuple[tuple[str, Callable[[Measure], str]], ...] = (
    ("request bytes per sync, MB (10⁶), median / max", lambda m: spread(request_mb(m), 1e6, 1)),
    ("hook time per sync, ms, median / max", lambda m: spread([t for _, t in m.synced], 1, 0)),
    ("syncs (hook log)", lambda m: f"{len(m.synced)}"),
    ("apply → all pods and Services, s", lambda m: f"{children(m):.1f}"),
    ("apply → first condition, s", lambda m: f"{m.at['condition']:.1f}"),
    ("last pod marked Running → Running condition, s", lambda m: f"{running_after(m):.2f}"),
    (
        "Scheduler marked Succeeded → Succeeded condition, s",
        lambda m: f"{after(m, 'succeeded', 'exited'):.2f}",
    ),
    ("Succeeded → clean-up done, s", lambda m: f"{after(m, 'cleaned', 'succeeded'):.2f}"),
    ("apply → clean-up done, s", lambda m: f"{m.at['cleaned']:.1f}"),
    ("Metacontroller CPU, s", lambda m: f"{m.cpu_metacontroller:.2f}"),
    ("hook CPU, s", lambda m: f"{m.cpu_hook:.2f}"),
    ("Metacontroller + hook CPU, s", lambda m: f"{cpu(m):.2f}"),
    ("API requests (create / patch / update / delete)", lambda m: " / ".join(
        f"{m.requests[v]:,}" for v in ("create", "patch", "update", "delete"))),
)  # fmt: skip

TO_LIFE_CPU_S = 14.5  # training-operator v1.8.1, the 1/100/1000 job's life
LIFE_TARGETS: tuple[tuple[str, Callable[[Measure], float], float, str], ...] = (
    ("request per sync ≤ 10 MB (max)", lambda m: max(request_mb(m), default=0) / 1e6, 10, "MB"),
    ("Running reported ≤ 1 s after the last pod runs", running_after, 1, "s"),
    (
        "Succeeded reported ≤ 1 s after the Scheduler exits 0",
        lambda m: after(m, "succeeded", "exited"),
        1,
        "s",
    ),
    (
        f"Metacontroller + hook CPU for the life ≤ 2x training-operator's {TO_LIFE_CPU_S} s",
        cpu,
        2 * TO_LIFE_CPU_S,
        "s",
    ),
)


def configmap_report(
    measures: list[Measure], settings: list[Setting], args: argparse.Namespace, seconds: float
) -> str:
    """The big job's whole life under each setting, one column each (the previous release's,
    MX_CONFIG inline; the per-job ConfigMap under Metacontroller's default apply strategy; as
    shipped), and the targets, met or not for the shipped one."""
    names = [m.setting.name for m in measures]
    rows = [[label] + [cell(m) for m in measures] for label, cell in LIFE]
    targets = []
    for what, figure, limit, unit in LIFE_TARGETS:
        met = "**met**" if figure(measures[-1]) <= limit else "**not met**"
        targets.append([what] + [f"{figure(m):,.2f} {unit}" for m in measures] + [met])
    flags = "; ".join(f"{s.name}: `{' '.join(s.flags)}`" for s in settings)
    lines = [
        CONFIGMAP_START,
        f"Generated by `make bench-e2e BENCH_ARGS=--configmap` (`python -m scripts.bench.e2e "
        f"{' '.join(args.argv)}`) in {seconds:,.0f} s; Metacontroller's flags: {flags}.",
        "",
        *machine("Metacontroller, the hook, etcd, kube-apiserver and the bench share them"),
        "",
        *table(["target", *names, "met (shipped)"], targets),
        "",
        *table([f"figure, {measures[0].scenario.name}", *names], rows),
        CONFIGMAP_END,
    ]
    return "\n".join(lines)
