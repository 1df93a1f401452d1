"""Tune train.py's classifier: the program of every role of an MXTune job (examples/tune.yaml).

The TunerTracker keeps the trials: a small HTTP service (tracker.py) on its port. Each
TunerServer registers under its key (its MX_CONFIG label: the template's tuner-server-key), takes
the trials meant for that key one at a time, trains train.py's model with the trial's learning
rate and hidden size (one process, local kvstore, CPU) and reports its held-out accuracy. The
Tuner submits a grid, waits for every result, prints each trial and the best, then stops the
tracker, which stops the servers. The Tuner decides the job: it exits 0 only if the best
accuracy reaches --threshold.
"""

import argparse
import itertools
import json
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field

import tracker
from tracker import Json

# The pause between attempts to reach a tracker whose pod or Service is not up yet.
RETRY_SECONDS = 0.5


class TuneError(Exception):
    """Why a role gives up: printed, and the process exits 1."""


@dataclass(frozen=True)
class Config:
    """What a process reads of MX_CONFIG: its role, the tracker's address, the servers' key."""

    role: str
    index: int
    tracker: tuple[str, int]
    key: str


def read_config(environ: Mapping[str, str]) -> Config:
    text = environ.get("MX_CONFIG")
    if not text:
        raise TuneError("MX_CONFIG is not set: tune.py runs as a pod of an MXTune MXJob")
    try:
        config = json.loads(text)
        (address,) = config["cluster"]["tunertracker"]
        return Config(
            role=config["task"]["type"],
            index=int(config["task"]["index"]),
            tracker=(address["url"], int(address["port"])),
            key=str(config["labels"].get("tunerserver", "")),
        )
    except (ValueError, KeyError, TypeError) as error:
        raise TuneError(f"MX_CONFIG is not an MXTune job's (one TunerTracker): {text}") from error


@dataclass
class Client:
    """Calls to the tracker, retried while it cannot be reached, until `deadline` (monotonic)."""

    tracker: tuple[str, int]
    deadline: float
    # The tracker is in the cluster: never through a proxy the environment may name.
    opener: urllib.request.OpenerDirector = field(
        default_factory=lambda: urllib.request.build_opener(urllib.request.ProxyHandler({}))
    )

    def call(self, route: str, body: Json) -> Json:
        host, port = self.tracker
        url = f"http://{host}:{port}{route}"
        request = urllib.request.Request(url, json.dumps(body).encode(), method="POST")
        while True:
            try:
                with self.opener.open(request, timeout=tracker.POLL_SECONDS + 10) as response:
                    answer: Json = json.loads(response.read())
                    return answer
            except urllib.error.HTTPError as error:
                raise TuneError(f"{url} refused: {error.read().decode()}") from error
            except (urllib.error.URLError, OSError) as error:
                if time.monotonic() > self.deadline:
                    raise TuneError(f"cannot reach the tracker at {url}: {error}") from error
                time.sleep(RETRY_SECONDS)


def run_tracker(config: Config, args: argparse.Namespace) -> int:
    port = config.tracker[1]
    print(f"tracker: serving on port {port}", flush=True)
    try:
        board = tracker.serve(port, args.timeout)
    except OSError as error:
        raise TuneError(f"cannot serve on port {port}: {error}") from error
    if not board.stopped:
        raise TuneError(f"no Tuner stopped the tracker within {args.timeout} s")
    print(f"tracker: stopped; servers told to stop: {sorted(board.told)}", flush=True)
    return 0


def run_trial(trial: Json, gpu: bool) -> float:
    """Train train.py's model with the trial's hyperparameters; its held-out accuracy."""
    # MXNet starts a parameter-server node inside `import mxnet` for any DMLC_ROLE but
    # `worker` (ps-lite's rule), and a tune job's roles are none of those.
    os.environ.pop("DMLC_ROLE", None)
    import mxnet as mx
    import train

    hyper = [f"--epochs={trial['epochs']}", f"--lr={trial['lr']}", f"--hidden={trial['hidden']}"]
    device = ["--gpu"] if gpu else []
    net = train.train(train.options([*hyper, *device]), mx.kv.create("local"))
    return train.accuracy(net, *train.held_out())


def run_server(config: Config, args: argparse.Namespace) -> int:
    name = f"tunerserver-{config.index}"
    client = Client(config.tracker, time.monotonic() + args.timeout)
    client.call("/register", {"server": name, "key": config.key})
    print(f"{name}: registered with key {config.key!r}", flush=True)
    while True:
        answer = client.call("/next", {"server": name})
        if answer.get("stop"):
            print(f"{name}: told to stop", flush=True)
            return 0
        if "trial" in answer:
            trial = answer["trial"]
            print(f"{name}: trial {trial['id']} {trial}", flush=True)
            accuracy = run_trial(trial, args.gpu)
            client.call("/result", {**trial, "accuracy": accuracy, "server": name})
        elif time.monotonic() > client.deadline:
            raise TuneError(f"neither a trial nor a stop within {args.timeout} s")


def grid(args: argparse.Namespace, key: str) -> list[Json]:
    pairs = itertools.product(args.learning_rates, args.hidden_sizes)
    return [{"lr": lr, "hidden": h, "epochs": args.epochs, "key": key} for lr, h in pairs]


def results(client: Client, count: int) -> list[Json]:
    """Every trial's result, or TuneError once the deadline passes without them."""
    while True:
        answer = client.call("/results", {})
        if answer["pending"] == 0:
            return sorted(answer["results"], key=lambda r: r["id"])
        if time.monotonic() > client.deadline:
            raise TuneError(
                f"{answer['pending']} of {count} trials have no result in time; "
                f"TunerServers registered (name: key): {answer['servers']}"
            )


def run_tuner(config: Config, args: argparse.Namespace) -> int:
    client = Client(config.tracker, time.monotonic() + args.timeout)
    trials = grid(args, config.key)
    client.call("/trials", {"trials": trials})
    print(f"tuner: {len(trials)} trials for key {config.key!r}", flush=True)
    done = results(client, len(trials))
    for r in done:
        line = f"lr {r['lr']:<6g}  hidden {r['hidden']:3d}  accuracy {r['accuracy']:.4f}"
        print(f"trial {r['id']}  {line}  on {r['server']}", flush=True)
    best = max(done, key=lambda r: float(r["accuracy"]))
    print(f"best: trial {best['id']}  accuracy {best['accuracy']:.4f}", flush=True)
    told = client.call("/stop", {})
    print(f"tuner: tracker stopped, servers told: {told['told']}", flush=True)
    if best["accuracy"] < args.threshold:
        raise TuneError(f"the best accuracy {best['accuracy']:.4f} is below {args.threshold}")
    print(f"tuner: the best accuracy reaches the threshold {args.threshold}", flush=True)
    return 0


ROLES = {"tunertracker": run_tracker, "tunerserver": run_server, "tuner": run_tuner}


def floats(text: str) -> list[float]:
    return [float(item) for item in text.split(",")]


def ints(text: str) -> list[int]:
    return [int(item) for item in text.split(",")]


def options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--learning-rates", type=floats, default=[0.001, 0.01], help="a,b,...")
    parser.add_argument("--hidden-sizes", type=ints, default=[4, 64], help="a,b,...")
    parser.add_argument("--epochs", type=int, default=10, help="per trial")
    parser.add_argument("--threshold", type=float, default=0.9, help="the best must reach it")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds any role waits")
    parser.add_argument("--gpu", action="store_true", help="servers train on the pod's GPU")
    args = parser.parse_args(argv)
    if min(args.epochs, *args.hidden_sizes) < 1 or min(args.learning_rates) <= 0:
        parser.error("--epochs and --hidden-sizes must be at least 1, --learning-rates above 0")
    if args.timeout <= 0 or not 0 <= args.threshold <= 1:
        parser.error("--timeout must be above 0, --threshold between 0 and 1")
    return args


def main(argv: list[str], environ: Mapping[str, str]) -> int:
    args = options(argv)
    try:
        config = read_config(environ)
        role = ROLES.get(config.role)
        if role is None:
            raise TuneError(f"task type {config.role!r} is not an MXTune role: {sorted(ROLES)}")
        return role(config, args)
    except TuneError as error:
        print(f"tune.py: {error}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], os.environ))
