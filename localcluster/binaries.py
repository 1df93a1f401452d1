"""The pinned kube-apiserver, etcd and kubectl, from scripts/k8s-binaries.sh."""

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import REPO, buildscript
from .errors import ClusterError

BINARIES_SCRIPT = REPO / "scripts" / "k8s-binaries.sh"
BUILD_TIMEOUT = 40 * 60  # a cold Go build of kube-apiserver on 2 cores; later runs take a second


@dataclass(frozen=True)
class Binaries:
    kube_apiserver: Path
    etcd: Path
    kubectl: Path


def obtain_binaries(progress: Callable[[str], None]) -> Binaries:
    """Run scripts/k8s-binaries.sh (a cold build takes minutes) and return the paths it prints."""
    paths = _binaries_script([], progress)
    try:
        return Binaries(
            kube_apiserver=paths["KUBE_APISERVER"], etcd=paths["ETCD"], kubectl=paths["KUBECTL"]
        )
    except KeyError as missing:
        raise ClusterError(f"{BINARIES_SCRIPT} printed no {missing}") from None


def obtain_kubectl(progress: Callable[[str], None]) -> Path:
    """Only the kubectl of scripts/k8s-binaries.sh (`kubectl` argument): the machine's of the
    pinned minor, else one it builds and caches."""
    paths = _binaries_script(["kubectl"], progress)
    if "KUBECTL" not in paths:
        raise ClusterError(f"{BINARIES_SCRIPT} kubectl printed no KUBECTL")
    return paths["KUBECTL"]


def _binaries_script(args: list[str], progress: Callable[[str], None]) -> dict[str, Path]:
    try:
        env = {**os.environ, "PYTHON": sys.executable}
        return buildscript.run(BINARIES_SCRIPT, args, progress, env, BUILD_TIMEOUT)
    except buildscript.BuildScriptError as error:
        raise ClusterError(str(error)) from None
