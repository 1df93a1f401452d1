"""The shell commands of the pages a newcomer reads first, read from the pages, and what each is:
run without a cluster, run on the API-server tier's server, or listed with the reason it cannot
run there (`KINDS`). A command of none of these kinds fails tests/manifests/test_doc_commands.py.
"""

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from tests.support import REPO

PAGES = (
    "README.md",
    "docs/install.md",
    "docs/migrating-from-training-operator.md",
    "docs/kueue.md",
)
FENCE = re.compile(r"^( *)```(sh|console|bash)\n(.*?)^ *```", re.M | re.S)
HEREDOC = re.compile(r"<<-?'?(\w+)'?")
COMMENT = re.compile(r"\s+#\s.*$", re.M)
# A command's parts: what `;`, `&&` and `||` join (no page quotes one of them).
JOINS = re.compile(r"\s*(?:;|&&|\|\|)\s*")
HERE, CLUSTER, NOWHERE = "here", "cluster", "nowhere"


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # of its opening fence
    language: str
    text: str  # dedented

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass(frozen=True)
class Command:
    block: Block
    text: str  # as written, continuation lines and heredoc bodies included

    @property
    def parts(self) -> list[str]:
        """Its commands, comments dropped and white space made single spaces."""
        words = " ".join(COMMENT.sub("", self.text.replace("\\\n", " ")).split())
        return JOINS.split(words)

    @property
    def fails_with(self) -> str | None:
        """The error its comment says it ends with (`# ends with '...'`), if any."""
        found = re.search(r"# ends with '(.+)'$", self.text, re.M)
        return found.group(1) if found else None


@dataclass(frozen=True)
class Kind:
    name: str
    pattern: str  # matches a whole part
    runs: str  # HERE, CLUSTER or NOWHERE
    why: str = ""  # for NOWHERE: why, and what tests it instead


def blocks(page: str) -> list[Block]:
    """The page's fenced sh, bash and console blocks, in order."""
    text = (REPO / page).read_text()
    found = []
    for match in FENCE.finditer(text):
        indent, language, body = match.groups()
        line = text[: match.start()].count("\n") + 1
        found.append(Block(page, line, language, re.sub(f"^{indent}", "", body, flags=re.M)))
    return found


def commands(block: Block) -> list[Command]:
    """The block's commands: a console block's `$ ` lines (the rest is output); an sh block's
    lines but blank and comment lines, each with its continuation lines, the lines of a quoted
    argument and its heredoc body."""
    lines = block.text.splitlines()
    if block.language == "console":
        return [Command(block, line[2:]) for line in lines if line.startswith("$ ")]
    found, i = [], 0
    while i < len(lines):
        start, i = i, i + 1
        if not lines[start].strip() or lines[start].lstrip().startswith("#"):
            continue
        while lines[i - 1].endswith("\\") or not _quotes_closed("\n".join(lines[start:i])):
            i += 1
        for delimiter in HEREDOC.findall("\n".join(lines[start:i])):
            while lines[i - 1].strip() != delimiter or i - 1 == start:
                i += 1
        found.append(Command(block, "\n".join(lines[start:i])))
    return found


def _quotes_closed(text: str) -> bool:
    try:
        shlex.split(text)
    except ValueError:  # "No closing quotation": the argument goes on on the next line
        return False
    return True


def page_commands(page: str) -> list[Command]:
    return [command for block in blocks(page) for command in commands(block)]


def kind_of(part: str) -> Kind | None:
    """The first kind whose pattern matches the whole part."""
    return next((k for k in KINDS if re.fullmatch(k.pattern, part, re.S)), None)


def runs(command: Command) -> str | None:
    """Where the command runs: NOWHERE if a part cannot run, CLUSTER if a part needs one, HERE
    otherwise; None if a part is of no kind."""
    kinds = [kind_of(part) for part in command.parts]
    if None in kinds:
        return None
    found = {k.runs for k in kinds if k}
    return next(where for where in (NOWHERE, CLUSTER, HERE) if where in found)


NETWORK = "needs the network, which the test machines may not have"
NO_KUBELET = "waits for pods or reads their logs, and no kubelet runs pods on the tier's server"
SHARED = (
    "would take the MXJob CRD, the CompositeController or namespaces from the other tests of the "
    "tier's shared server (no namespace controller finishes a namespace's deletion there)"
)
TRAINING_OPERATOR = (
    "needs training-operator and its jobs: tests/apiserver/test_migration_v1_8.py runs these "
    "lines from the page on training-operator v1.8.1 (test_migration.py the render check on "
    "v1.7's jobs)"
)
STEP_1 = (
    "changes the Metacontroller of step 1's install, which needs the network: "
    "tests/apiserver/test_install_overlay.py applies these to Metacontroller's release manifests"
)
# First match wins: the kinds that cannot run come before the runnable ones.
KINDS = (
    Kind("placeholder", r".*<[a-z-]+>.*", NOWHERE, "names objects of yours (`<...>`)"),
    Kind("docker", r"docker (build|push) .*", NOWHERE,
         "needs a Docker engine, which the test machines lack: CI builds and smoke-tests the "
         "images; tests/manifests/test_quick_start.py checks what these build and push"),
    Kind("make-image", r"make image(-push)?( .*)?", NOWHERE,
         "builds with Docker: tests/manifests/test_release.py checks the commands it runs"),
    Kind("kind", r"kind load .*", NOWHERE, "needs kind and a Docker engine"),
    Kind("make-run", r"make run", NOWHERE,
         "serves the hook until Ctrl-C: tests/manifests/test_make_run.py runs it"),
    Kind("make-test", r"make test", NOWHERE, "runs every tier, this test among them"),
    Kind("clone", r"git clone .*", NOWHERE, NETWORK),
    Kind("cd-clone", r"cd mxjob-controller", NOWHERE, "the clone's folder: the test runs in a checkout"),
    Kind("venv", r"(python3 -m venv \.venv|(\.venv/bin/)?pip install .*)", NOWHERE,
         f"installs from PyPI: {NETWORK}; `make .venv/.dev` makes the tests' .venv"),
    Kind("metacontroller-from-github", r'kubectl (apply|delete) -k "https://github\.com/.*', NOWHERE,
         f"{NETWORK}: with-metacontroller builds the same release from its copy "
         "(tests/manifests/test_offline.py)"),
    Kind("metacontroller-chart", r"helm (package|install|uninstall) metacontroller.*", NOWHERE,
         f"Metacontroller's chart, packaged from its source: {NETWORK}; "
         "tests/manifests/test_metacontroller_helm.py renders it with the page's values"),
    Kind("chart", r"helm (install|upgrade|uninstall) mxjob-controller .*", NOWHERE,
         f"{SHARED}: tests/apiserver/test_helm_install.py installs, upgrades and uninstalls the "
         "chart on a server of its own"),
    Kind("katib", r"kubectl -n kubeflow (edit|rollout restart|apply -f experiment|get experiment)\b.*",
         NOWHERE, "needs Katib: tests/manifests/test_katib.py checks what these give it"),
    Kind("training-operator", r"(kubectl (get|patch) validatingwebhookconfigurations? .*"
         r"|kubectl -n kubeflow (patch deployment training-operator|rollout status deployment/training-operator).*"
         r"|kubectl get mxjobs --all-namespaces -o yaml \| .*|mxjob-controller takeover.*"
         r"|kubectl apply --server-side --force-conflicts -k .*)", NOWHERE, TRAINING_OPERATOR),
    Kind("step-1-metacontroller", r"(kubectl -n metacontroller (patch|scale) statefulset .*"
         r"|kubectl apply -f manifests/(components/adoption-guard|overlays/with-metacontroller)/.*)",
         NOWHERE, STEP_1),
    Kind("pods", r"(kubectl .*rollout status .*|kubectl logs .*)", NOWHERE, NO_KUBELET),
    Kind("watch", r"kubectl get .* --watch", NOWHERE, "watches until Ctrl-C"),
    Kind("delete", r"kubectl delete .*", NOWHERE, SHARED),
    Kind("variable", r"[A-Z_]+=[\w./:-]+", HERE),
    Kind("overlay-folder", r"mkdir -p my-install", HERE),
    Kind("overlay-file", r"cat > my-install/kustomization\.yaml <<EOF .* EOF", HERE),
    Kind("render", r"mxjob-controller render examples/[\w/.-]+\.yaml", HERE),
    Kind("apply-overlay", r"kubectl apply -k (my-install|manifests/overlays/[\w-]+)", CLUSTER),
    Kind("apply-example", r"kubectl apply -f examples/[\w/.-]+\.yaml( -n [\w-]+)?", CLUSTER),
    Kind("apply-example-image", r'sed "s\|ghcr\.io/mxjob-controller/\|\$REGISTRY/\|" '
         r"examples/[\w/.-]+\.yaml \| kubectl apply -f -", CLUSTER),
    Kind("wait-crd", r"kubectl wait --for=condition=Established crd/[\w.]+", CLUSTER),
    Kind("get", r"kubectl get (crd|compositecontroller|pods|mxj|mxjobs)( [\w./=-]+)+", CLUSTER),
    Kind("label-namespace", r"kubectl label namespace [\w-]+ [\w./-]+=[\w-]+", CLUSTER),
)  # fmt: skip


def yaml_files(page: str) -> dict[str, str]:
    """The page's kustomizations that name their file (`# my-install/kustomization.yaml`),
    by path: the overlays its commands apply."""
    text = (REPO / page).read_text()
    found = re.findall(r"^```yaml\n# ([\w.-]+/kustomization\.yaml)\n(.*?)^```", text, re.M | re.S)
    return {path: f"# {path}\n{body}" for path, body in found}


def repository_files() -> list[Path]:
    """What the commands see of the checkout."""
    names = ("Dockerfile", "manifests", "examples", "docs", "charts", "app", "metacontroller")
    return [REPO / name for name in names]
