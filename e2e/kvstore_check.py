"""An MXJob container's program: check that a `dist_sync` kvstore aggregates every worker's push.

Every replica of the e2e MXJob runs this file. On a scheduler or server (``DMLC_ROLE``) the
``import mxnet`` below never returns: MXNet starts the parameter-server node and exits when the
job is done, exactly as upstream's examples rely on. A worker pushes known values, pulls them
back, prints one JSON line with what it saw and exits 0 when the sums are right, 1 otherwise.

`--fail-worker ID` makes the worker whose DMLC_WORKER_ID is ID exit 1 at once, as a user's
bug would, before it joins the cluster: the failure path of the e2e test.

`--hold-worker ID --hold-file PATH` makes the worker whose DMLC_WORKER_ID is ID wait, before it
joins the cluster, until PATH exists (at most HOLD_SECONDS): a worker whose pod runs but has not
joined yet, which a controller can replace (tests/e2e/test_mxnet_takeover.py; ps-lite cannot take
back a worker that joined and died, docs/e2e.md).

`--kv-store TYPE` creates that kvstore instead of `dist_sync`: `local` for a job with a single
Worker and neither Scheduler nor Server, which never joins a parameter-server cluster.

Before it creates the kvstore, a worker prints one JSON line with the ps-lite root it was given
(`DMLC_PS_ROOT_URI`, `DMLC_PS_ROOT_PORT`, as this process read them, null if unset), so that
the value is on record even when creating the kvstore fails.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import mxnet as mx

# Above MXNET_KVSTORE_BIGARRAY_BOUND (10**6 elements) a value is sliced across all servers,
# so this key proves that both servers take part, not only the one a small key hashes to.
BIG = 1_000_001
SHAPES = {3: (2, 3), 5: (4,), 7: (BIG,)}
ROUNDS = 2
HOLD_SECONDS = 300


def expected_sum(num_workers: int, round_: int) -> float:
    """What every worker must pull after round `round_`: the sum of all workers' pushes."""
    return float(sum((rank + 1) * (round_ + 1) for rank in range(num_workers)))


def run_round(kv: mx.kvstore.KVStore, round_: int) -> dict[str, float]:
    """Push `(rank + 1) * (round + 1)` under every key and pull the aggregate back."""
    keys = list(SHAPES)
    kv.push(keys, [mx.nd.ones(SHAPES[k]) * (kv.rank + 1) * (round_ + 1) for k in keys])
    outs = [mx.nd.zeros(SHAPES[k]) for k in keys]
    kv.pull(keys, out=outs)
    return {str(k): float(v.mean().asscalar()) for k, v in zip(keys, outs, strict=True)}


def hold(flag: Path, worker: str) -> None:
    """Wait until `flag` exists, at most HOLD_SECONDS, before joining the cluster."""
    print(f"worker {worker}: holding until {flag} exists (--hold-worker)", flush=True)
    deadline = time.monotonic() + HOLD_SECONDS
    while not flag.exists() and time.monotonic() < deadline:
        time.sleep(0.1)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fail-worker", metavar="ID", help="this worker exits 1 at once")
    parser.add_argument("--kv-store", default="dist_sync", help="the kvstore type to create")
    parser.add_argument("--hold-worker", metavar="ID", help="this worker waits for --hold-file")
    parser.add_argument("--hold-file", metavar="PATH", help="what the held worker waits for")
    args = parser.parse_args(argv)
    if args.hold_worker is not None and args.hold_worker == os.environ.get("DMLC_WORKER_ID"):
        hold(Path(args.hold_file), args.hold_worker)
    if args.fail_worker is not None and args.fail_worker == os.environ.get("DMLC_WORKER_ID"):
        print(f"worker {args.fail_worker}: failing on purpose (--fail-worker)", flush=True)
        return 1
    root = {k: os.environ.get(k) for k in ("DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT")}
    print(json.dumps({"check": "env", "kv_store": args.kv_store, **root}), flush=True)
    kv = mx.kv.create(args.kv_store)
    kv.init(list(SHAPES), [mx.nd.zeros(s) for s in SHAPES.values()])
    pulled = [run_round(kv, r) for r in range(ROUNDS)]
    expected = [expected_sum(kv.num_workers, r) for r in range(ROUNDS)]
    ok = all(set(p.values()) == {e} for p, e in zip(pulled, expected, strict=True))
    result = {
        "check": "kvstore",
        "ok": ok,
        "kv_store": kv.type,
        "rank": kv.rank,
        "num_workers": kv.num_workers,
        "worker_id": os.environ.get("DMLC_WORKER_ID"),
        "mx_config": os.environ.get("MX_CONFIG"),
        "pulled": pulled,
        "expected": expected,
    }
    print(json.dumps(result, sort_keys=True), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
