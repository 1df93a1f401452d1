"""Train a small classifier with MXNet's kvstore: the program of the examples image.

Every worker trains the same perceptron (two hidden layers) on its own shard of a synthetic
set (points on two interleaved spirals, made from fixed seeds: no download, so it runs
air-gapped); the kvstore sums the gradients and, under `dist_sync`, the servers run the
optimizer. After each epoch a worker prints its held-out accuracy, then a digest of its final
weights, which is the same on every worker of a `dist_sync` job.

Run with `DMLC_ROLE=scheduler` or `server` (as the controller sets it), `import mxnet` starts
that parameter-server node and exits when the workers are done: one program for every role.
"""

import argparse
import hashlib
import math
import sys

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

POINTS_PER_WORKER = 1024
HELD_OUT = 1000
HELD_OUT_SEED = 999
HIDDEN = 64
TURNS = 1.25


def spirals(seed: int, n: int) -> tuple[mx.nd.NDArray, mx.nd.NDArray]:
    """`n` points, half on each of two interleaved spiral arms, labelled by arm, with noise."""
    rng = np.random.RandomState(seed)
    label = rng.randint(0, 2, n)
    turn = rng.uniform(0.0, 1.0, n)
    angle = turn * TURNS * 2 * math.pi + label * math.pi
    radius = 0.2 + turn
    points = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    points += rng.normal(0.0, 0.03, points.shape)
    return mx.nd.array(points.astype("float32")), mx.nd.array(label.astype("float32"))


def held_out() -> tuple[mx.nd.NDArray, mx.nd.NDArray]:
    """The points every worker measures its accuracy on, which no worker trains on."""
    return spirals(seed=HELD_OUT_SEED, n=HELD_OUT)


def model(hidden: int) -> gluon.nn.HybridSequential:
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(hidden, activation="relu"), gluon.nn.Dense(hidden, activation="relu"))
    net.add(gluon.nn.Dense(2))
    return net


def accuracy(net: gluon.Block, x: mx.nd.NDArray, y: mx.nd.NDArray) -> float:
    return float((net(x).argmax(axis=1) == y).mean().asscalar())


def digest(net: gluon.Block) -> str:
    params = sorted(net.collect_params().items())
    return hashlib.sha256(b"".join(p.data().asnumpy().tobytes() for _, p in params)).hexdigest()


def options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=10, help="passes over the shard")
    parser.add_argument("--batch-size", type=int, default=128, help="per worker")
    parser.add_argument("--lr", type=float, default=0.01, help="Adam's learning rate")
    parser.add_argument("--hidden", type=int, default=HIDDEN, help="units per hidden layer")
    parser.add_argument("--kv-store", default="dist_sync", help="local for a single Worker")
    parser.add_argument("--gpu", action="store_true", help="train on the pod's first GPU")
    args = parser.parse_args(argv)
    if min(args.epochs, args.batch_size, args.hidden) < 1 or args.lr <= 0:
        parser.error("--epochs, --batch-size and --hidden must be at least 1, --lr above 0")
    return args


def train(args: argparse.Namespace, kv: mx.kvstore.KVStore) -> gluon.Block:
    """Train on this worker's shard, printing the held-out accuracy after each epoch."""
    mx.random.seed(7)
    device = mx.gpu(0) if args.gpu else mx.cpu()
    net = model(args.hidden)
    net.initialize(mx.init.Xavier(), ctx=device)
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": args.lr}, kvstore=kv)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x, y = spirals(seed=100 + kv.rank, n=POINTS_PER_WORKER)
    held_x, held_y = (a.as_in_context(device) for a in held_out())
    batches = gluon.data.DataLoader(gluon.data.ArrayDataset(x, y), args.batch_size)
    for epoch in range(1, args.epochs + 1):
        total = 0.0
        for xb, yb in ((a.as_in_context(device), b.as_in_context(device)) for a, b in batches):
            with autograd.record():
                loss = loss_fn(net(xb), yb)
            loss.backward()
            trainer.step(xb.shape[0] * kv.num_workers)
            total += float(loss.sum().asscalar())
        mean = total / POINTS_PER_WORKER
        held = accuracy(net, held_x, held_y)
        print(f"epoch {epoch:2d}/{args.epochs}  loss {mean:.4f}  accuracy {held:.4f}", flush=True)
    return net


def main(argv: list[str]) -> int:
    args = options(argv)
    kv = mx.kv.create(args.kv_store)
    print(
        f"worker rank {kv.rank} of {kv.num_workers} ({kv.type}): {POINTS_PER_WORKER} points,"
        f" {args.epochs} epochs, accuracy on {HELD_OUT} held-out points",
        flush=True,
    )
    net = train(args, kv)
    print(f"trained: weights {digest(net)[:16]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
