"""The end-to-end bench's command line: what to measure, the fleet at rest, and the doc."""

import argparse

import scripts.bench.e2e as e2e
from scripts.bench.workloads import CONFIGMAP, QUICK, SCENARIOS, Scenario


def what_to_measure(parser: argparse.ArgumentParser) -> None:
    """The scenarios, Metacontroller's settings and the controllers measured."""
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    parser.add_argument("--scenarios", help="comma-separated scenario names (default: all)")
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=FLAGS",
        help="measure these Metacontroller flags too (space-separated)",
    )
    parser.add_argument(
        "--no-defaults",
        dest="defaults",
        action="store_false",
        help="skip Metacontroller's defaults",
    )
    parser.add_argument(
        "--pprof",
        type=int,
        default=0,
        metavar="SECONDS",
        help="profile Metacontroller's CPU for SECONDS from each apply (go tool pprof -top)",
    )
    parser.add_argument(
        "--configmap",
        action="store_true",
        help="only the big job's whole life, side by side: MX_CONFIG inline under release "
        "0.1.0's flags (before), the per-job ConfigMap under them, and as shipped (a few "
        "minutes); writes its own block of the doc",
    )
    parser.add_argument(
        "--training-operator",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="measure training-operator v1.8.1 too, as its release ships it, after ours "
        "(default: yes; not with --configmap)",
    )


def the_fleet(parser: argparse.ArgumentParser) -> None:
    """The fleet of running jobs at rest (its sizes, its jobs, its windows), and the doc."""
    parser.add_argument(
        "--fleet",
        default="0,10,20",
        metavar="N,N,...",
        help="the at-rest fleet sizes, ascending (default 0,10,20; '' for none)",
    )
    parser.add_argument(
        "--fleet-shape", default="1/16/64", help="the fleet's jobs (default 1/16/64)"
    )
    parser.add_argument(
        "--window",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="each at-rest window (default 120)",
    )
    parser.add_argument(
        "--no-write", dest="write", action="store_false", help="print only; leave docs/ alone"
    )


def cli(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench.e2e", description=e2e.__doc__)
    what_to_measure(parser)
    the_fleet(parser)
    args = parser.parse_args(argv)
    args.argv = argv
    if args.configmap or (args.quick and "--fleet" not in argv):
        args.fleet = ""
    if args.configmap:
        args.training_operator = False
    return args


def chosen(args: argparse.Namespace) -> list[Scenario]:
    if args.configmap:
        names: tuple[str, ...] = CONFIGMAP
    elif args.scenarios:
        names = tuple(args.scenarios.split(","))
    elif args.quick:
        names = QUICK
    else:
        return [s for s in SCENARIOS if not s.name.startswith("life")]
    return [s for s in SCENARIOS if s.name in names or s.name.split(" ")[0] in names]


def fleet_shape(text: str) -> Scenario:
    scheduler, servers, workers = (int(n) for n in text.split("/"))
    if scheduler != 1:
        raise SystemExit("--fleet-shape: an MXJob has one Scheduler (1/SERVERS/WORKERS)")
    return Scenario(f"{text}", 1, servers, workers, 300)
