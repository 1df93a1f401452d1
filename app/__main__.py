"""Command line: `python -m app serve` runs the hook, `python -m app render` dry-runs a job."""

import argparse

import uvicorn


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m app", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the sync hook")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    args = parser.parse_args(argv)
    if args.command == "serve":
        uvicorn.run("app.web:app", host=args.host, port=args.port, log_level="info")


if __name__ == "__main__":
    main()
