"""Command line (`mxjob-controller`, or `python -m app`): `serve` runs the hook, `render`
dry-runs a job, `ttl-controller` deletes finished jobs whose TTL has passed, `kueue-status`
runs the Kueue Workload-status writer (docs/kueue.md), `takeover` hands training-operator's
running MXJobs over to Metacontroller (docs/migrating-from-training-operator.md)."""

import argparse

from app import __version__
from app.cli import serve
from app.core.render import CHILD_TYPES, INLINE_CHILD_TYPES

# After the commands' own help: what Ctrl-C does, the same for every command.
CTRL_C = (
    "Ctrl-C stops any command without a traceback: serve and ttl-controller finish the work in "
    "flight and exit 0, the others exit 130 at once."
)


def main(argv: list[str] | None = None, prog: str = "mxjob-controller") -> int:
    """Run the command `argv` names (sys.argv's by default), as `prog`; return the exit code."""
    args = _parser(prog).parse_args(argv)
    if args.command == "serve":
        return serve.run(args.host, args.port, f"{prog} serve")
    if args.command in ("kueue-status", "ttl-controller"):
        # Imported by the commands that run them: `render` starts without their clients.
        from app.cli import components

        if args.command == "kueue-status":
            return components.kueue_status(args.host, args.port, f"{prog} kueue-status")
        return components.ttl_controller(args.host, args.port, args.log_level)
    if args.command == "takeover":
        from app.cli import takeover

        return takeover.run(args, f"{prog} takeover")
    child_types = INLINE_CHILD_TYPES if args.no_configmaps else CHILD_TYPES
    # Imported by the command that runs it: `serve` starts without jsonschema and cel-python.
    from app.cli import render

    return render.run(args.file, args.namespace, args.expand, child_types, args.pod_security)


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__, epilog=CTRL_C)
    parser.add_argument("--version", action="version", version=f"mxjob-controller {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    hook = commands.add_parser(
        "serve",
        help="serve the sync hook",
        description="Serve the sync hook (POST /sync, GET /healthz, GET /metrics) until SIGTERM "
        "or Ctrl-C.",
        epilog=serve.settings_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    hook.add_argument("--host", default="127.0.0.1", help="address to listen on (%(default)s)")
    hook.add_argument("--port", type=_port, default=8080, help="port to listen on (%(default)s)")
    render_parser(commands)
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


def render_parser(
    commands: "argparse._SubParsersAction[argparse.ArgumentParser]",
) -> None:
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
    dry_run.add_argument(
        "--pod-security",
        choices=("privileged", "baseline", "restricted"),
        default="",
        metavar="LEVEL",
        help="also refuse a job whose pods a namespace enforcing this Pod Security level "
        "(privileged, baseline, restricted) would refuse, naming the field, as the "
        "pod-security component does at admission",
    )


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
