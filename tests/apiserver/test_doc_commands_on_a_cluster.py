"""The commands of README.md, docs/install.md, docs/migrating-from-training-operator.md and
docs/kueue.md that need a cluster, run as written with the real kubectl on the session's API
server, each page in page order in a shell of its own (tests/support/doc_scripts.py): the
overlays applied twice where Metacontroller comes with them, the examples, the checks. Each
page starts from the cluster it assumes (without Metacontroller, or with it and Kueue); what the
pages applied is deleted afterwards, but the namespaces, which no namespace controller here
would finish deleting, and the CRDs, the same as the other tests install."""

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from localcluster.apiserver import ApiServer, Binaries
from localcluster.kueue import install_kueue_crds, obtain_kueue_crds
from localcluster.realstack import metacontroller_crds
from tests.support.cluster_errors import fail_on_cluster_error
from tests.support.doc_commands import CLUSTER, HERE, PAGES, page_commands, runs
from tests.support.doc_scripts import Outcome, applied, run_page
from tests.support.migration import install_metacontroller_crds

KEPT = {"Namespace", "CustomResourceDefinition"}
Prepare = Callable[[ApiServer, Callable[[str], None]], None]


def without_metacontroller(server: ApiServer, progress: Callable[[str], None]) -> None:
    names = [
        d["metadata"]["name"] for d in yaml.safe_load_all(metacontroller_crds().read_text()) if d
    ]
    server.kubectl("delete", "crd", *names, "--ignore-not-found")


def with_metacontroller(server: ApiServer, progress: Callable[[str], None]) -> None:
    install_metacontroller_crds(server)


def with_kueue(server: ApiServer, progress: Callable[[str], None]) -> None:
    """Kueue's CRDs, from its module (no build): what the pages' queues are made of."""
    install_kueue_crds(server, obtain_kueue_crds(progress))


def with_team_a(server: ApiServer, progress: Callable[[str], None]) -> None:
    server.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})


# The cluster each page starts from, as its text says.
CLUSTERS: dict[str, tuple[Prepare, ...]] = {
    "README.md": (without_metacontroller,),
    "docs/install.md": (without_metacontroller,),
    "docs/migrating-from-training-operator.md": (without_metacontroller, with_kueue),
    "docs/kueue.md": (with_metacontroller, with_kueue, with_team_a),
}


def metacontroller_installed(server: ApiServer) -> bool:
    found = server.kubectl("get", "crd", "compositecontrollers.metacontroller.k8s.io", check=False)
    return found.returncode == 0


def clean_up(server: ApiServer, folder: Path, metacontroller_before: bool) -> None:
    """Delete what the pages applied (but namespaces and CRDs), then leave Metacontroller's CRDs
    as they were before."""
    with_metacontroller(server, print)  # so that every kind the pages applied is known
    for flags, objects in applied(folder):
        removable = [o for o in objects if o["kind"] not in KEPT]
        server.kubectl("delete", "--ignore-not-found", "--wait=false", *flags, "-f", "-",
                       input=yaml.safe_dump_all(removable))  # fmt: skip
    without_metacontroller(server, print)
    if metacontroller_before:
        with_metacontroller(server, print)


@pytest.fixture(scope="module")
def ran(
    apiserver: ApiServer,
    k8s_binaries: Binaries,
    progress: Callable[[str], None],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, list[Outcome]]]:
    """Each page's commands that run here or on a cluster, run in order, their outcomes."""
    folder = tmp_path_factory.mktemp("doc-commands")
    before = metacontroller_installed(apiserver)
    outcomes = {}
    try:
        for i, page in enumerate(PAGES):
            with fail_on_cluster_error():
                for prepare in CLUSTERS[page]:
                    prepare(apiserver, progress)
            outcomes[page] = run_page(page, {HERE, CLUSTER}, folder / str(i),
                                      k8s_binaries.kubectl, apiserver.kubeconfig)  # fmt: skip
        yield outcomes
    finally:
        with fail_on_cluster_error():
            clean_up(apiserver, folder, before)


def test_every_page_is_given_its_cluster() -> None:
    assert list(CLUSTERS) == list(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_the_pages_commands_run_on_a_cluster_as_written(
    ran: dict[str, list[Outcome]], page: str
) -> None:
    outcomes = ran[page]
    assert [o.command.text for o in outcomes] == [
        c.text for c in page_commands(page) if runs(c) in {HERE, CLUSTER}
    ]
    assert any(runs(o.command) == CLUSTER for o in outcomes)
    assert [o.unexpected() for o in outcomes if o.unexpected()] == []


def test_no_command_warns_of_something_deprecated(ran: dict[str, list[Outcome]]) -> None:
    """kustomize's `commonLabels` warning among them (tests/manifests/test_kustomize_warnings.py)."""
    warned = [o.stderr for outcomes in ran.values() for o in outcomes if "deprecated" in o.stderr]
    assert warned == []
