"""`render` gives the real API server's verdict: on every manifest of the corpus
(tests/support/render_corpus.py), `mxjob-controller render` exits 0 exactly where kube-apiserver
holding the shipped CRD admits the manifest with `kubectl create --dry-run=server
--validate=strict`, and where the API server names a field it refuses, render names it too.

kubectl reads YAML into JSON before it sends it, and that keeps only the last of two equal keys;
the API server's strict decoding refuses such a key when it reads the document as written. The
cases marked `as_written` (keys given twice) are therefore POSTed as YAML, dry run and strict,
the verdict being the API server's on those bytes.
"""

import re
import ssl
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from localcluster.crds import install_crds
from tests.support import REPO, cli
from tests.support.render_corpus import CASES, Case

# A field path the API server names: `* spec.x[0].y: ...` or `is invalid: spec.x: ...`.
NAMED = re.compile(r"(?:^\* |is invalid: )((?:metadata|spec)[\w.\[\]/-]*): ", re.M)


def server_verdict(apiserver: Any, namespace: str, case: Case, folder: Path) -> tuple[bool, str]:
    """Whether the API server admits the case, and what it said."""
    if case.as_written:
        url = f"{apiserver.url}/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs"
        answer = httpx.post(
            url,
            params={"dryRun": "All", "fieldValidation": "Strict"},
            content=case.text.encode(),
            headers={
                "Authorization": f"Bearer {apiserver.token}",
                "Content-Type": "application/yaml",
            },
            verify=ssl.create_default_context(cafile=str(apiserver.ca_cert)),
            timeout=30,
        )
        return answer.status_code == 201, answer.text
    path = folder / f"{case.id}.yaml"
    path.write_text(case.text)
    done = apiserver.kubectl(
        "create", f"-n={namespace}", "--dry-run=server", "--validate=strict", "-f", str(path),
        check=False,
    )  # fmt: skip
    return done.returncode == 0, done.stdout + done.stderr


def render_verdict(namespace: str, case: Case) -> tuple[bool, str]:
    """Whether `render -` exits 0 on the case, and what it said on stderr (run in this process:
    the command's own code, without an interpreter's start per case)."""
    done = cli.run("render", f"--namespace={namespace}", "-", stdin=case.text)
    assert done.returncode in (0, 1, 2), done.stderr
    return done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def verdicts(apiserver: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    install_crds(apiserver)
    namespace = "render-differential"
    apiserver.kubectl("create", "namespace", namespace, check=False)
    folder = tmp_path_factory.mktemp("corpus")

    with ThreadPoolExecutor(4) as pool:
        server = list(pool.map(lambda c: server_verdict(apiserver, namespace, c, folder), CASES))
    ours = [render_verdict(namespace, case) for case in CASES]
    return {case.id: pair for case, pair in zip(CASES, zip(server, ours, strict=True), strict=True)}


def test_the_corpus_is_wide_and_both_ways() -> None:
    """At least 150 cases, as many as README and docs/apiserver-tests.md say."""
    assert len(CASES) >= 150
    for page in ("README.md", "docs/apiserver-tests.md"):
        text = " ".join((REPO / page).read_text().split())
        assert f"{len(CASES)} manifests" in text, page


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_render_agrees_with_the_api_server(case: Case, verdicts: dict[str, Any]) -> None:
    (admitted, said), (passed, printed) = verdicts[case.id]
    assert passed == admitted, f"API server: {said}\nrender: {printed}"
    named = set(NAMED.findall(said))
    if named:
        assert any(f": {field}" in printed for field in named), (said, printed)


def test_both_verdicts_are_common(verdicts: dict[str, Any]) -> None:
    admitted = [case for case, ((ok, _), _) in verdicts.items() if ok]
    assert 0.25 < len(admitted) / len(verdicts) < 0.75, len(admitted)
