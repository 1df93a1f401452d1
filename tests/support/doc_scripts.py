"""A page's commands run as written, in the page's order, in one bash shell and a copy of the
checkout: those that run without a cluster, and with `kubeconfig` those that need one.
`mxjob-controller` is the virtualenv's console entry point, or `python -m app` where the
virtualenv has none; `kubectl` is the real one, recording what it applies for `applied`."""

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support import REPO
from tests.support.doc_commands import Command, page_commands, repository_files, runs, yaml_files
from tests.support.kustomize import documents
from tests.support.yamls import load_all

ENTRY_POINT = REPO / ".venv" / "bin" / "mxjob-controller"
FALLBACK = f'#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} -m app "$@"\n'
RECORDING_KUBECTL = """#!/bin/bash
# The real kubectl; each apply's folder, arguments and standard input recorded for the clean-up.
if [[ " $* " == *" apply "* ]]; then
    record="$OUT/applied-$(date +%s%N)"
    printf '%s\\0' "$PWD" "$@" > "$record.args"
    if [[ " $* " == *" -f - "* ]]; then
        tee "$record.stdin" | {kubectl} "$@"
        exit "${{PIPESTATUS[1]}}"
    fi
fi
exec {kubectl} "$@"
"""
STEP = '{{ {text}\n}} >"$OUT/{i}.out" 2>"$OUT/{i}.err"; echo $? >"$OUT/{i}.rc"\n'


@dataclass(frozen=True)
class Outcome:
    command: Command
    code: int
    stdout: str
    stderr: str

    def unexpected(self) -> str | None:
        """What went otherwise than the page says: an exit code but 0, or, where its comment
        says the command ends with an error, another outcome."""
        expected = self.command.fails_with
        if expected is None and self.code == 0:
            return None
        if expected is not None and self.code != 0 and expected in self.stderr:
            return None
        return (
            f"{self.command.block.where}: {self.command.text!r} exited {self.code}: {self.stderr}"
        )


def checkout(folder: Path, page: str) -> Path:
    """`folder` made a checkout as the page's commands see it, with the kustomizations the page
    shows in the folders they name."""
    folder.mkdir(parents=True)
    for path in repository_files():
        (folder / path.name).symlink_to(path)
    for name, text in yaml_files(page).items():
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text(text)
    return folder


def tools(folder: Path, kubectl: Path | None) -> Path:
    """The folder of the commands the pages name that are not the system's."""
    folder.mkdir()
    if ENTRY_POINT.exists():
        (folder / "mxjob-controller").symlink_to(ENTRY_POINT)
    else:  # the checkout's virtualenv was made before the entry point was declared
        (folder / "mxjob-controller").write_text(FALLBACK)
    if kubectl is not None:
        (folder / "kubectl").write_text(RECORDING_KUBECTL.format(kubectl=kubectl))
    for tool in folder.iterdir():
        tool.chmod(0o755)
    return folder


def run_page(
    page: str,
    where: set[str],
    folder: Path,
    kubectl: Path | None = None,
    kubeconfig: Path | None = None,
) -> list[Outcome]:
    """The page's commands that run `where` (HERE, CLUSTER), in order, in one shell."""
    steps = [c for c in page_commands(page) if runs(c) in where]
    home, out = checkout(folder / "checkout", page), folder / "out"
    out.mkdir()
    env = {
        "PATH": f"{tools(folder / 'bin', kubectl)}:/usr/bin:/bin",
        "HOME": str(folder),  # a kubectl discovery cache of its own
        "OUT": str(out),
        **({"KUBECONFIG": str(kubeconfig)} if kubeconfig else {}),
    }
    script = "set -o pipefail\n" + "".join(
        STEP.format(text=c.text, i=i) for i, c in enumerate(steps)
    )
    subprocess.run(["bash", "-c", script], cwd=home, env=env, timeout=900, check=False)
    return [
        Outcome(c, int((out / f"{i}.rc").read_text()), (out / f"{i}.out").read_text(),
                (out / f"{i}.err").read_text())
        for i, c in enumerate(steps)
    ]  # fmt: skip


def applied(folder: Path) -> Iterator[tuple[list[str], list[dict[str, Any]]]]:
    """What the pages' `kubectl apply`s under `folder` applied, newest first: each one's
    namespace flags and objects."""
    for record in sorted(folder.rglob("applied-*.args"), reverse=True):
        cwd, *args = record.read_text().split("\0")[:-1]
        flags = [f"--namespace={args[i + 1]}" for i, a in enumerate(args) if a == "-n"]
        source = args[args.index("-k" if "-k" in args else "-f") + 1]
        if "-k" in args:
            objects = documents(Path(cwd) / source)
        elif source == "-":
            objects = load_all(record.with_suffix(".stdin").read_text())
        else:
            objects = load_all((Path(cwd) / source).read_text())
        yield flags, objects
