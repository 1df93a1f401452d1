"""What the Tuner of examples/tune.yaml printed (examples/image/tune.py), read back from its log."""

import re

# A line per trial, in trial order, then the best one.
TRIAL = re.compile(
    r"^trial (\d+)  lr ([\d.e-]+) +hidden +(\d+)  accuracy ([\d.]+)  on (tunerserver-\d+)$", re.M
)
BEST = re.compile(r"^best: trial (\d+)  accuracy ([\d.]+)$", re.M)
# The example's --threshold: the Tuner exits 0 (the job Succeeded) only if the best reaches it.
THRESHOLD = 0.9


def trials(log: str) -> list[tuple[int, float, int, float, str]]:
    """(trial, learning rate, hidden size, held-out accuracy, TunerServer) per trial."""
    return [(int(t), float(lr), int(h), float(a), s) for t, lr, h, a, s in TRIAL.findall(log)]


def best(log: str) -> list[tuple[int, float]]:
    """(trial, accuracy) of the best trial, once the Tuner has every result."""
    return [(int(t), float(a)) for t, a in BEST.findall(log)]
