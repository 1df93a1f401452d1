"""The images' pip-compile locks: read, and checked whole against the packages' own requirements."""

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support import REPO

EXAMPLES = REPO / "examples" / "image"
# (input, its lock, the machines its image is built for): scripts/lock.sh compiles these.
LOCKS = [
    (REPO / "requirements.txt", REPO / "requirements.lock", ("x86_64", "aarch64")),
    (EXAMPLES / "requirements.txt", EXAMPLES / "requirements.lock", ("x86_64", "aarch64")),
    (EXAMPLES / "requirements-gpu.txt", EXAMPLES / "requirements-gpu.lock", ("x86_64",)),
]
ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._\-]*)==(\S+)((?:\s*\\\n\s*--hash=\S+)*)", re.M)
HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})\b")

# What answers "the requirements of this package at this version", or None if not at hand.
Requires = Callable[[str, str], list[str] | None]
# The GPU lock's packages that the dev venv does not hold (the CUDA wheels are gigabytes; the
# venv keeps its own setuptools), as PyPI's metadata of these versions gives their requirements
# without an extra (pip's --report in `make lock`, 2026-11-28). A new version is not at hand
# until it is added here.
GPU_ONLY = {
    "mxnet-cu117==1.9.1": ["numpy (<2.0.0,>1.16.0)", "requests (<3,>=2.20.0)",
                           "graphviz (<0.9.0,>=0.8.1)"],
    "nvidia-cublas-cu11==11.10.3.66": ["setuptools", "wheel"],
    "nvidia-cuda-nvrtc-cu11==11.7.99": [],
    "nvidia-cuda-runtime-cu11==11.7.99": ["setuptools", "wheel"],
    "nvidia-cudnn-cu11==8.5.0.96": ["nvidia-cublas-cu11"],
    "nvidia-cufft-cu11==10.9.0.58": [],
    "nvidia-curand-cu11==10.2.10.91": ["setuptools", "wheel"],
    "nvidia-cusolver-cu11==11.4.0.1": ["nvidia-cublas-cu11"],
    "nvidia-cusparse-cu11==11.7.4.91": ["setuptools", "wheel"],
    "nvidia-nccl-cu11==2.14.3": [],
    "nvidia-nvtx-cu11==11.7.91": ["setuptools", "wheel"],
    "setuptools==84.2.1": [],
    "wheel==0.48.0": ["packaging >= 24.0"],
}  # fmt: skip


@dataclass(frozen=True)
class Pin:
    version: str
    hashes: tuple[str, ...]


def read_lock(text: str) -> dict[str, Pin]:
    """{package: its version and sha256 hashes} of a lock pip-compile wrote."""
    return {
        canonicalize_name(name): Pin(version, tuple(HASH.findall(hashes)))
        for name, version, hashes in ENTRY.findall(text)
    }


def read_inputs(path: Path) -> list[Requirement]:
    """The requirements of a human-edited input, comments left out."""
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return [Requirement(line) for line in lines if line]


def environments(machines: Iterable[str]) -> list[dict[str, str]]:
    """The marker environments of the images: CPython 3.11 on Linux, one per machine."""
    return [
        {
            "implementation_name": "cpython",
            "platform_python_implementation": "CPython",
            "python_version": "3.11",
            "python_full_version": "3.11.10",
            "os_name": "posix",
            "sys_platform": "linux",
            "platform_system": "Linux",
            "platform_machine": machine,
        }
        for machine in machines
    ]


def applies(requirement: Requirement, extras: frozenset[str], where: list[dict[str, str]]) -> bool:
    """Whether a package wanted with `extras` needs `requirement` on one of the images."""
    marker = requirement.marker
    return marker is None or any(
        marker.evaluate(env | {"extra": extra}) for env in where for extra in {"", *extras}
    )


def installed(name: str, version: str) -> list[str] | None:
    """The requirements of `name` as this venv holds it, if it holds that version."""
    try:
        found = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    return (found.requires or []) if found.version == version else None


def at_hand(name: str, version: str) -> list[str] | None:
    """What PyPI records for the GPU lock's packages the venv lacks; else `installed`."""
    recorded = GPU_ONLY.get(f"{name}=={version}")
    return recorded if recorded is not None else installed(name, version)


def problems(
    inputs: list[Requirement], lock: dict[str, Pin], requires: Requires, where: list[dict[str, str]]
) -> list[str]:
    """What keeps `lock` from being exactly the inputs and all they need, each at a version that
    satisfies every package that needs it."""
    found: list[str] = []
    todo = [("the input", requirement) for requirement in inputs]
    seen: set[tuple[str, frozenset[str]]] = set()
    wanted: set[str] = set()
    while todo:
        by, requirement = todo.pop()
        name, extras = canonicalize_name(requirement.name), frozenset(requirement.extras)
        wanted.add(name)
        pin = lock.get(name)
        if pin is None:
            found.append(f"{by} needs {requirement}: not in the lock")
            continue
        if not requirement.specifier.contains(pin.version, prereleases=True):
            found.append(f"{by} needs {requirement}: the lock has {pin.version}")
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        lines = requires(name, pin.version)
        if lines is None:
            found.append(f"{name}=={pin.version}: its requirements are not at hand")
            continue
        needed = (Requirement(line) for line in lines)
        todo += [(f"{name}=={pin.version}", r) for r in needed if applies(r, extras, where)]
    found += [f"{name}=={lock[name].version}: needed by nothing" for name in lock.keys() - wanted]
    return sorted(found)
