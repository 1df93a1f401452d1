"""Kubernetes resource quantities as numbers, for comparing a manifest's requests and limits."""

import re


def mebibytes(quantity: str) -> float:
    """A memory quantity (`256Mi`, `1Gi`, `1048576`) in MiB."""
    number, unit = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]i)?", quantity).groups()  # type: ignore[union-attr]
    return float(number) * {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024**2, None: 2**-20}[unit]
