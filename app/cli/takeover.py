"""`mxjob-controller takeover`: the command line around app/controllers/takeover; its messages
start with the name it was called by (`mxjob-controller takeover`, `python -m app takeover`)."""

import argparse
import sys


def run(args: argparse.Namespace, prog: str = "mxjob-controller takeover") -> int:
    """The takeover with these arguments, its messages starting with `prog`: 0 done, 1 refused
    or failed, 2 no cluster."""
    from lightkube import Client, ConfigError

    from app.controllers.takeover import main
    from app.controllers.takeover.cluster import TakeoverError

    namespace, slash, name = args.operator.partition("/")
    if not (slash and namespace and name):
        print(f"{prog}: --operator takes NAMESPACE/NAME, not {args.operator!r}", file=sys.stderr)
        return 2
    try:
        client = Client()
    except ConfigError as err:
        print(f"{prog}: no cluster to talk to: {err}", file=sys.stderr)
        return 2
    options = main.Options(
        args.namespace, args.dry_run, namespace, name, not args.no_operator_check
    )
    try:
        return main.run(client, options, _say, _warn)
    except TakeoverError as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        # Ctrl-C: the exit code is the command line's (app/cli/entry.py); a cluster half taken
        # over is no harm, as long as the takeover is run again.
        if not args.dry_run:
            _warn(f"{prog}: interrupted; what it changed stays, run it again to finish")
        raise
    finally:
        client.close()


def _say(line: str) -> None:
    print(line, flush=True)


def _warn(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
