"""What a worker of the examples image printed (examples/image/train.py), read back from its log."""

import re

# A line per epoch, then the digest of the final weights.
EPOCH = re.compile(r"^epoch +(\d+)/(\d+)  loss ([\d.]+)  accuracy ([\d.]+)$", re.M)
TRAINED = re.compile(r"^trained: weights ([0-9a-f]{16})$", re.M)
# The quick start's promise (README, docs/e2e.md): held-out accuracy at least this after the
# example's 10 epochs, from below FIRST_EPOCH_BELOW after the first.
MIN_ACCURACY = 0.95
FIRST_EPOCH_BELOW = 0.8


def accuracies(log: str) -> list[tuple[int, float]]:
    """(epoch, held-out accuracy) for each epoch the log reports."""
    return [(int(m[0]), float(m[3])) for m in EPOCH.findall(log)]


def digests(log: str) -> list[str]:
    """The weights' digest, once a worker finished training."""
    return TRAINED.findall(log)


def learned(log: str, epochs: int) -> bool:
    """Whether the worker trained `epochs` epochs, its accuracy rising to MIN_ACCURACY."""
    found = [accuracy for _, accuracy in accuracies(log)]
    return (
        len(found) == epochs
        and len(digests(log)) == 1
        and found[0] < FIRST_EPOCH_BELOW <= MIN_ACCURACY <= found[-1]
    )
