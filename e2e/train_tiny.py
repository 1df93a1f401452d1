"""An MXJob container's program: train a tiny Gluon classifier with a `dist_sync` kvstore.

Every replica of the e2e MXJob runs this file; on a scheduler or server the ``import mxnet``
below runs the parameter-server node and exits (see kvstore_check.py). Each worker trains on
its own shard of a synthetic, linearly separable data set for a few batches; the optimizer
runs on the servers. A worker prints one JSON line (losses, held-out accuracy, a digest of the
final weights, which must be the same on every worker) and exits 0 when it learned, 1 if not.
"""

import hashlib
import json
import os
import sys
from typing import TypedDict

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

FEATURES = 8
BATCH = 32
BATCHES = 20
MIN_ACCURACY = 0.9


def synthetic(seed: int, n: int) -> tuple[mx.nd.NDArray, mx.nd.NDArray]:
    """`n` points labelled by which side of one fixed hyperplane they fall on."""
    truth = np.random.RandomState(0).randn(FEATURES)
    x = np.random.RandomState(seed).randn(n, FEATURES).astype("float32")
    return mx.nd.array(x), mx.nd.array((x @ truth > 0).astype("float32"))


def accuracy(net: gluon.Block, x: mx.nd.NDArray, y: mx.nd.NDArray) -> float:
    predicted = net(x).argmax(axis=1)
    return float((predicted == y).mean().asscalar())


def digest(net: gluon.Block) -> str:
    params = sorted(net.collect_params().items())
    raw = b"".join(p.data().asnumpy().tobytes() for _, p in params)
    return hashlib.sha256(raw).hexdigest()[:16]


class Learned(TypedDict):
    """What one worker's training gives: its first and last loss, its held-out accuracy and
    a digest of its final weights."""

    first_loss: float
    last_loss: float
    accuracy: float
    weights: str


def train(kv: mx.kvstore.KVStore) -> Learned:
    mx.random.seed(7)
    net = gluon.nn.Dense(2, in_units=FEATURES)
    net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5}, kvstore=kv)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x, y = synthetic(seed=100 + kv.rank, n=BATCH * BATCHES)
    losses = []
    for b in range(BATCHES):
        xb, yb = x[b * BATCH : (b + 1) * BATCH], y[b * BATCH : (b + 1) * BATCH]
        with autograd.record():
            loss = loss_fn(net(xb), yb)
        loss.backward()
        trainer.step(BATCH * kv.num_workers)
        losses.append(float(loss.mean().asscalar()))
    held_x, held_y = synthetic(seed=999, n=500)
    return {
        "first_loss": losses[0],
        "last_loss": losses[-1],
        "accuracy": accuracy(net, held_x, held_y),
        "weights": digest(net),
    }


def main() -> int:
    kv = mx.kv.create("dist_sync")
    learned = train(kv)
    ok = learned["accuracy"] >= MIN_ACCURACY and learned["last_loss"] < learned["first_loss"]
    result = {
        "check": "train",
        "ok": ok,
        "rank": kv.rank,
        "num_workers": kv.num_workers,
        "worker_id": os.environ.get("DMLC_WORKER_ID"),
        "batches": BATCHES,
        **learned,
    }
    print(json.dumps(result, sort_keys=True), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
