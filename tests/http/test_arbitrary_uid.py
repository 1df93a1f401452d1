"""The real hook under an arbitrary UID in group 0, as OpenShift's restricted-v2 runs it: the
manifests fix no runAsUser, so the image must work for any UID (root switches to it here)."""

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support import REPO
from tests.support.servers import serving

UID = 12345  # not the image's 10001, and in no passwd file
# A job's second sync: its pods and Services are asked for (the first answer is a status alone).
NEW_JOB = REPO / "tests" / "golden" / "new-job.request.json"
TOKEN = "arbitrary-uid-token"


@pytest.fixture
def mounted_token() -> Iterator[Path]:
    """The token as a Secret volume mounts it with no fsGroup: root's, group 0, mode 0440."""
    folder = Path(tempfile.mkdtemp(prefix="mxjob-token-"))
    folder.chmod(0o750)
    token = folder / "token"
    token.write_text(TOKEN)
    token.chmod(0o440)
    yield token
    shutil.rmtree(folder)


def as_uid(uid: int) -> list[str]:
    """Run as `uid` with group 0 and no other group, as a container given that UID does."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.fail("switching to another UID needs root and setpriv (util-linux)", pytrace=False)
    return ["setpriv", f"--reuid={uid}", "--regid=0", "--clear-groups", "--"]


def ids(pid: int, field: str) -> list[int]:
    """The real, effective, saved and file-system IDs of `field` (Uid, Gid) from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return [int(n) for n in line.split()[1:]]
    raise LookupError(field)


@pytest.mark.slow  # the real server in a process of its own, as another user: a second or more
def test_the_hook_serves_and_syncs_under_an_arbitrary_uid(mounted_token: Path) -> None:
    env = {"MXJOB_AUTH_TOKEN_FILE": str(mounted_token), "PYTHONDONTWRITEBYTECODE": "1"}
    with serving(env, prefix=as_uid(UID)) as server:
        assert (ids(server.proc.pid, "Uid"), ids(server.proc.pid, "Gid")) == ([UID] * 4, [0] * 4)
        assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
        answer = httpx.post(
            f"{server.url}/sync",
            content=NEW_JOB.read_bytes(),
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=30,
        )
    assert answer.status_code == 200, answer.text
    kinds = {child["kind"] for child in answer.json()["children"]}
    assert {"Pod", "Service"} <= kinds
