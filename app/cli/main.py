"""Command line: `python -m app serve` runs the hook, `python -m app render` dry-runs a job,
`python -m app ttl-controller` deletes finished jobs whose TTL has passed,
`python -m app kueue-status` runs the Kueue Workload-status writer (docs/kueue.md),
`python -m app takeover` hands training-operator's running MXJobs over to Metacontroller
(docs/migrating-from-training-operator.md)."""

import argparse
import sys

from app import __version__
from app.cli import render
from app.core.render import CHILD_TYPES, INLINE_CHILD_TYPES
from app.service.errors import SettingsError


def main(argv: list[str] | None = None) -> int:
    """Run the command `argv` names; return the exit code."""
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args.host, args.port)
    if args.command in ("kueue-status", "ttl-controller"):
        # Imported by the commands that run them: `render` starts without their clients.
        from app.cli import components

        if args.command == "kueue-status":
            return components.kueue_status(args.host, args.port)
        return components.ttl_controller(args.host, args.port, args.log_level)
    if args.command == "takeover":
        from app.cli import takeover

        return takeover.run(args)
    child_types = INLINE_CHILD_TYPES if args.no_configmaps else CHILD_TYPES
    return render.run(args.file, args.namespace, args.expand, child_types)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m app", description=__doc__)
    parser.add_argument("--version", action="version", version=f"mxjob-controller {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the sync hook")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=_port, default=8080)
    dry_run = commands.add_parser(
        "render",
        help="print the status and children the hook gives MXJobs at creation; "
        "exit 1 if the hook refuses any of them or one sets a field the CRD does not know, "
        "2 if the input is not MXJobs",
    )
    dry_run.add_argument("file", help="YAML file with one or more MXJobs, or - for stdin")
    dry_run.add_argument("--namespace", default="default", help="for jobs that name none")
    dry_run.add_argument(
        "--expand",
        action="store_true",
        help="show each container's env as its process reads it: ConfigMap references "
        "resolved and $(VAR) expanded, as the kubelet does",
    )
    dry_run.add_argument(
        "--no-configmaps",
        action="store_true",
        help="as under a CompositeController that declares no ConfigMap children: MX_CONFIG "
        "whole in every pod, and the size rule of that layout",
    )
    component(
        commands,
        "ttl-controller",
        "delete each finished MXJob once its ttlSecondsAfterFinished has passed "
        "(the cluster's credentials: in-cluster, else KUBECONFIG); /metrics and /healthz on --port",
    ).add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    component(
        commands,
        "kueue-status",
        "write the PodsReady condition and clear evicted reservations on the Kueue "
        "Workloads of MXJobs (in cluster, or with $KUBECONFIG); /metrics and /healthz on --port",
    )
    takeover_parser(commands)
    return parser


def takeover_parser(
    commands: "argparse._SubParsersAction[argparse.ArgumentParser]",
) -> None:
    summary = (
        "label the pods, Services and PodGroups training-operator made for each MXJob so "
        "that Metacontroller adopts them: run after training-operator stopped handling MXJobs, "
        "before the install (in-cluster credentials, else KUBECONFIG); exit 1 if "
        "training-operator may still run MXJobs or the API server refuses a call"
    )
    command = commands.add_parser("takeover", help=summary, description=summary)
    command.add_argument("--dry-run", action="store_true", help="list every change, make none")
    command.add_argument(
        "-n", "--namespace", default=None, help="only this namespace's MXJobs (default: all)"
    )
    command.add_argument(
        "--operator",
        default="kubeflow/training-operator",
        metavar="NAMESPACE/NAME",
        help="training-operator's Deployment, checked to run no MXJobs (default: %(default)s)",
    )
    command.add_argument(
        "--no-operator-check",
        action="store_true",
        help="skip that check (a training-operator installed otherwise, already removed)",
    )


def _serve(host: str, port: int) -> int:
    # Imported here, as the components are: `render` starts without uvicorn.
    from app.service import server, settings

    try:
        config = settings.from_env()
    except SettingsError as err:
        for line in str(err).splitlines():
            print(f"python -m app serve: {line}", file=sys.stderr)
        return 2
    server.run(config, host, port)
    return 0


def component(
    commands: "argparse._SubParsersAction[argparse.ArgumentParser]", name: str, summary: str
) -> argparse.ArgumentParser:
    """An optional component's command: its probes and metrics on --host:--port."""
    command = commands.add_parser(name, help=summary)
    command.add_argument("--host", default="127.0.0.1")
    command.add_argument("--port", type=_port, default=9090)
    return command


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port: an integer from 0 to 65535")
    return int(text)
