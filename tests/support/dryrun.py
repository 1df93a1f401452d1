"""A page's commands run as written, up to what needs a registry or a cluster: in a copy of the
checkout, `docker` and the `kubectl` commands that talk to a cluster only record what they are
asked, and `kubectl apply` builds (`kubectl kustomize`) or reads what it would apply.

A build is kept in the kustomize cache's folder (tests/support/kustomize_cache.py) under a key of
the folder built (its files and their bytes, followed through links) and of everything under
manifests/, metacontroller/ and examples/, the folders a build can refer to: the same overlay
built by another test, worker or run is read, not built again."""

import functools
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

from tests.support import REPO, kustomize_cache
from tests.support.kustomize import kubectl
from tests.support.yamls import load_all

# What the commands see of the checkout.
CHECKOUT = ("Dockerfile", "manifests", "examples", "docs")
STUBS = r"""
# A folder with the same files is built once (with-metacontroller is applied twice; every test
# applies an overlay), and kept for other workers and runs.
built() {
    local key
    files() { tar --mtime=@0 --sort=name -chf - "$1" 2>/dev/null; }  # bytes, not times
    key="$BUILDS/dryrun-$({ echo "$INPUTS"; files "$1"; } | md5sum | cut -c1-32)"
    [ -f "$key.yaml" ] || "$KUBECTL" kustomize "$1" > "$key.$$" || { rm -f "$key.$$"; return 1; }
    [ -f "$key.yaml" ] || mv "$key.$$" "$key.yaml"
    cat "$key.yaml"
}
docker() { printf '%s\n' "$*" >> "$OUT/docker"; }
kubectl() {
    local words=("$@") verb="" from="" i
    for ((i = 0; i < $#; i++)); do
        case "${words[i]}" in
            apply) verb=apply ;;
            -k) from="k ${words[i + 1]}" ;;
            -f) from="f ${words[i + 1]}" ;;
        esac
    done
    case "$verb $from" in
        "apply k "*) built "${from#k }" >> "$OUT/applied.yaml" ;;
        "apply f "*) cat "${from#f }" >> "$OUT/applied.yaml" ;;
        *) printf '%s\n' "$*" >> "$OUT/kubectl"; return 0 ;;
    esac
    echo --- >> "$OUT/applied.yaml"
}
"""


def sh_blocks(text: str) -> list[str]:
    """The fenced `sh` blocks of `text` (indented in a list or not), dedented, in order."""
    blocks = re.findall(r"^( *)```sh\n(.*?)^ *```", text, re.M | re.S)
    return [re.sub(f"^{indent}", "", block, flags=re.M) for indent, block in blocks]


def checkout(folder: Path) -> Path:
    """`folder` made a checkout as the commands see it (links to the repository's files)."""
    for name in CHECKOUT:
        (folder / name).symlink_to(REPO / name)
    return folder


def run(script: str, home: Path, out: Path) -> None:
    """Run `script` in `home` with bash -eu; what was asked goes to files in `out`."""
    builds = kustomize_cache.folder or out
    env = {"PATH": "/usr/bin:/bin", "OUT": str(out), "KUBECTL": kubectl()}
    env |= {"BUILDS": str(builds), "INPUTS": _inputs()}
    done = subprocess.run(["bash", "-euc", STUBS + script], cwd=home, env=env,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    # kustomize warns of Metacontroller's own `commonLabels`; anything else is an error.
    errors = [line for line in done.stderr.splitlines() if not line.startswith("# Warning: ")]
    assert (done.returncode, errors) == (0, []), done.stderr


@functools.cache
def _inputs() -> str:
    return kustomize_cache.inputs_digest((*kustomize_cache.ROOTS, REPO / "examples"), kubectl())


def asked(out: Path, tool: str) -> list[list[str]]:
    """The commands `tool` (docker, kubectl) was asked to run, as words."""
    path = out / tool
    return [shlex.split(line) for line in path.read_text().splitlines()] if path.exists() else []


def applied(out: Path) -> list[dict[str, Any]]:
    """Everything `kubectl apply` would have applied, in order."""
    path = out / "applied.yaml"
    return load_all(path.read_text()) if path.exists() else []


def images(objects: list[dict[str, Any]], kind: str) -> set[str]:
    """The container images of the `kind` objects (Deployments, MXJobs)."""
    found = set()
    for obj in (o for o in objects if o["kind"] == kind):
        specs = [r["template"]["spec"] for r in obj["spec"].get("mxReplicaSpecs", {}).values()]
        specs += [obj["spec"]["template"]["spec"]] if "template" in obj["spec"] else []
        found |= {c["image"] for spec in specs for c in spec["containers"]}
    return found
