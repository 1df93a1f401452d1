"""The soak's command: build the mix, start the hook, soak it, check the warm passes, report."""

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

import scripts.soak as soak_package
from localcluster.ports import free_port
from scripts.soak.corpus import corpus
from scripts.soak.load import soak, warm
from scripts.soak.report import report
from scripts.soak.server import Server

MAX_SECONDS = 900


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.soak", description=soak_package.__doc__
    )
    parser.add_argument("--duration", type=float, default=180, help="seconds of load (<= 900)")
    parser.add_argument("--concurrency", type=int, default=8, help="concurrent clients")
    parser.add_argument("--max-requests", type=int, default=200_000, help="stop after these")
    args = parser.parse_args(argv)
    args.duration = min(args.duration, MAX_SECONDS)
    print("building requests ...", file=sys.stderr)
    cases = corpus()
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        server = Server(free_port(), log)
        server.start()
        try:
            answers, rss = warm(server, cases)
            print("soaking ...", file=sys.stderr)
            run = asyncio.run(soak(args, server, cases))
        finally:
            if server.proc and server.proc.poll() is None:
                server.stop()
        text = Path(log.name).read_text()
    run["notes"]["rss_base_1"] = rss
    notes, expected = run["notes"], {c.name: c.expected for c in cases}
    for moment in (answers, notes["answers_before"], notes["answers_after"], notes["answers_end"]):
        if moment != expected:
            run["tally"].errors.append("an answer of the warm pass differs from the core's")
    print(report(args, cases, run, text))
    return 1 if run["tally"].errors else 0


if __name__ == "__main__":
    sys.exit(main())
