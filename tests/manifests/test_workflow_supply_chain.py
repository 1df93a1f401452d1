"""The release workflow's supply chain (docs/security.md#supply-chain): every action pinned by its
full commit SHA with its tag in a comment, one pin per action; every image a job pushes built
with its SBOM and provenance (mode=max) and signed by digest with cosign keyless; images.txt
signed and its bundle attached; `id-token: write` in the jobs that sign and no other,
`packages: write` in the jobs that push and no other. The checker runs on the workflow and on
copies with a fault planted, each of which it must refuse; docs/install.md's verification names
the identity the signing has. test_image_digests.py runs the signing steps themselves."""

import re
from typing import Any

import pytest
import yaml

from app import __version__
from tests.support import REPO
from tests.support.overlays import IMAGE

WORKFLOW = REPO / ".github" / "workflows" / "ci.yaml"
INSTALL = REPO / "docs" / "install.md"
URL = "https://github.com/mxjob-controller/mxjob-controller"
ISSUER = "https://token.actions.githubusercontent.com"
USES = re.compile(r"^\s*(?:-\s+)?uses:", re.M)
PIN = re.compile(r"\s*(?:-\s+)?uses: ([\w.-]+/[\w./-]+)@([0-9a-f]{40}) # (v\d+\.\d+\.\d+)")
RAW_PUSH = re.compile(r"docker (?:image )?push|buildx build .*--push|imagetools create")


def pin_problems(text: str) -> list[str]:
    """Every `uses:` line pinned as `owner/repo@<40 hex> # vX.Y.Z`, each action one way."""
    problems: list[str] = []
    pins: dict[str, set[tuple[str, str]]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not USES.match(line):
            continue
        if match := PIN.fullmatch(line):
            pins.setdefault(match[1], set()).add((match[2], match[3]))
        else:
            problems.append(f"line {n}: not pinned by commit SHA with its tag: {line.strip()}")
    problems += [f"{a}: pinned {len(p)} ways" for a, p in sorted(pins.items()) if len(p) > 1]
    jobs = yaml.safe_load(text)["jobs"].values()
    steps = [s for j in jobs for s in j.get("steps", [])]
    written = sum("uses" in j for j in jobs) + sum("uses" in s for s in steps)
    if written != len(USES.findall(text)):
        problems.append(f"{written} uses in the workflow, {len(USES.findall(text))} on own lines")
    return problems


def granted(workflow: dict[str, Any], job: dict[str, Any]) -> dict[str, str]:
    """The job's token permissions: its own, else the workflow's (`write-all` as every one)."""
    given = job.get("permissions", workflow.get("permissions"))
    if isinstance(given, str):
        return {"id-token": given[: -len("-all")], "packages": given[: -len("-all")]}
    return dict(given or {"id-token": "write", "packages": "write"})  # the repository's default


def push_problems(steps: list[dict[str, Any]], push: dict[str, Any]) -> list[str]:
    """A push built with its SBOM and provenance, then signed by its digest under its name."""
    build, where = push["with"], push.get("id", "a push without an id")
    problems = [] if build.get("sbom") is True else [f"{where}: no SBOM (sbom: true)"]
    if build.get("provenance") != "mode=max":
        problems.append(f"{where}: no full provenance (provenance: mode=max)")
    names = set(re.findall(r"^\$\{\{ env\.(\w+) \}\}:", build["tags"], re.M))
    digest = f"${{{{ steps.{where}.outputs.digest }}}}"
    signed = [
        step
        for step in steps[steps.index(push) + 1 :]
        for var, value in step.get("env", {}).items()
        for name in names
        if value == digest and re.search(rf'^cosign sign --yes "\${name}@\${var}"$', step.get("run", ""), re.M)
    ]  # fmt: skip
    if len(names) != 1 or not signed:
        problems.append(f'{where}: not signed by digest (cosign sign --yes "$NAME@$DIGEST")')
    return problems


def job_problems(workflow: dict[str, Any], job: dict[str, Any]) -> list[str]:
    """Its pushes built and signed as they should be, cosign installed before it runs, and the
    token's id-token and packages writable exactly when the job signs and pushes."""
    steps = job.get("steps", [])
    runs = [s.get("run", "") for s in steps]
    builds = [s for s in steps if "docker/build-push-action@" in s.get("uses", "")]
    pushes = [s for s in builds if s["with"].get("push") is True]
    problems = [p for push in pushes for p in push_problems(steps, push)]
    if any(RAW_PUSH.search(run) for run in runs):
        problems.append("pushes outside docker/build-push-action")
    cosign = [i for i, run in enumerate(runs) if re.search(r"^cosign ", run, re.M)]
    installer = [
        i for i, s in enumerate(steps) if "sigstore/cosign-installer@" in s.get("uses", "")
    ]
    if cosign and not (installer and installer[0] < cosign[0]):
        problems.append("runs cosign before sigstore/cosign-installer")
    signs = any(re.search(r"^cosign sign", run, re.M) for run in runs)
    permissions = granted(workflow, job)
    for scope, needed in {"id-token": signs, "packages": bool(pushes)}.items():
        if needed != (permissions.get(scope) == "write"):
            problems.append(f"needs {scope}: write" if needed else f"{scope}: write, not needed")
    return problems


def list_problems(job: dict[str, Any]) -> list[str]:
    """A job that attaches images.txt signs it keyless and attaches the signature beside it."""
    runs = "\n".join(s.get("run", "") for s in job["steps"])
    if "images.txt" not in re.findall(r"^\s*gh release upload .*$", runs, re.M)[0]:
        return []
    bundle = re.search(
        r"^cosign sign-blob --yes --new-bundle-format --bundle (\S+) images\.txt$", runs, re.M
    )
    if not bundle:
        return ["images.txt attached unsigned"]
    if not re.search(rf"^\s*gh release upload \S+ images\.txt {re.escape(bundle[1])} ", runs, re.M):
        return ["images.txt's signature not attached"]
    return []


def problems(text: str) -> list[str]:
    workflow = yaml.safe_load(text)
    found = pin_problems(text)
    if granted(workflow, {}).get("id-token") == "write":
        found.append("the workflow gives every job id-token")
    for name, job in workflow["jobs"].items():
        found += [f"{name}: {p}" for p in job_problems(workflow, job)]
        if any("gh release upload" in s.get("run", "") for s in job["steps"]):
            found += [f"{name}: {p}" for p in list_problems(job)]
    return found


def test_the_workflow_holds_to_its_supply_chain() -> None:
    text = WORKFLOW.read_text()
    assert problems(text) == []
    jobs = yaml.safe_load(text)["jobs"]
    pushing = {
        (name, step["id"])
        for name, job in jobs.items()
        for step in job["steps"]
        if step.get("with", {}).get("push") is True
    }  # the checker has something to check
    assert pushing == {
        ("image", "push"),
        ("examples-image", "push-cpu"),
        ("examples-image", "push-gpu"),
    }
    signing = {n for n, j in jobs.items() if "id-token" in j.get("permissions", {})}
    assert signing == {"image", "examples-image", "release-digests"}
    assert len(PIN.findall(text)) == len(USES.findall(text)) > 30


CHECKOUT = "actions/checkout@11d5960a326750d5838078e36cf38b85af677262 # v4.4.0"
LOGIN = "docker/login-action@c94ce9fb468520275223c153574b00df6fe4bcc9"
HOOK_ID_TOKEN = (
    "      id-token: write # cosign keyless: the job's OIDC token for the signing certificate\n"
)
INSTALLER = (
    "      - uses: sigstore/cosign-installer@7e8b541eb2e61bf99390e1afd4be13a184e9ebc5 # v3.10.1\n"
    "        with:\n          cosign-release: v2.6.1\n"
)
SIGN_BLOB = "          cosign sign-blob --yes --new-bundle-format --bundle images.txt.sigstore.json images.txt\n"
PLANTED = {
    "tag-pinned": (CHECKOUT, "actions/checkout@v4", "not pinned by commit SHA with its tag: - uses: actions/checkout@v4"),
    "no-tag-comment": (f"{LOGIN} # v3.7.0", LOGIN, "not pinned by commit SHA with its tag"),
    "short-sha": (f"{LOGIN} # v3.7.0", "docker/login-action@c94ce9f # v3.7.0", "not pinned"),
    "two-pins": (CHECKOUT, CHECKOUT.replace("v4.4.0", "v4.2.2"), "actions/checkout: pinned 2 ways"),
    "flow-style": (f"- uses: {CHECKOUT}", "- {uses: actions/checkout@v4}", "on own lines"),
    "push-unsigned": ('          cosign sign --yes "$EXAMPLES_IMAGE@$GPU"\n', "", "push-gpu: not signed by digest"),
    "signed-by-tag": ('"$IMAGE@$DIGEST"', '"$IMAGE:$VERSION"', "image: push: not signed by digest"),
    "signed-with-a-key": ("--yes \"$IMAGE@", '--yes --key env://KEY "$IMAGE@', "push: not signed"),
    "no-sbom": ("sbom: true", "sbom: false", "image: push: no SBOM"),
    "min-provenance": ("provenance: mode=max", "provenance: mode=min", "push: no full provenance"),
    "raw-push": ('run: scripts/image-smoke.sh "$IMAGE:ci"', 'run: docker push "$IMAGE:ci"', "image-build: pushes outside"),
    "no-installer": (INSTALLER, "", "image: runs cosign before sigstore/cosign-installer"),
    "no-id-token": (HOOK_ID_TOKEN, "", "image: needs id-token: write"),
    "id-token-for-all": ("permissions:\n  contents: read\n", "permissions:\n  contents: read\n  id-token: write\n", "gives every job id-token"),
    "id-token-for-tests": ("  test:\n", "  test:\n    permissions: write-all\n", "test: id-token: write, not needed"),
    "packages-for-the-list": ("      contents: write\n", "      contents: write\n      packages: write\n", "release-digests: packages: write, not needed"),
    "list-unsigned": (SIGN_BLOB, "", "release-digests: images.txt attached unsigned"),
    "signature-left-behind": (" images.txt.sigstore.json --clobber", " --clobber", "images.txt's signature not attached"),
}  # fmt: skip


@pytest.mark.parametrize(("old", "new", "message"), PLANTED.values(), ids=PLANTED)
def test_the_checker_finds_planted_faults(old: str, new: str, message: str) -> None:
    text = WORKFLOW.read_text()
    assert old in text
    found = problems(text.replace(old, new, 1))
    assert any(message in problem for problem in found), found


def verify_flags(text: str) -> list[tuple[str, str, str]]:
    """(what, issuer, identity regexp) of each `cosign verify` and `verify-blob` on the page."""
    commands = re.findall(r"^cosign verify", text, re.M)
    found = re.findall(
        r"^cosign verify(?:-blob)? (\S+) .*?--certificate-oidc-issuer (\S+) \\\n"
        r"\s+--certificate-identity-regexp '([^']+)'$",
        text, re.M | re.S,
    )  # fmt: skip
    assert len(found) == len(commands), "each names the issuer and the identity"
    return found


def test_the_documented_identity_is_the_workflows() -> None:
    """The identity admits the release workflow at this version's tag, and nothing else."""
    section = INSTALL.read_text().split("### Verifying an image before use\n")[1].split("\n#")[0]
    found = verify_flags(section)
    assert [what for what, _, _ in found] == ["images.txt", f"{IMAGE}@sha256:<digest>"]
    workflow = f"{URL}/.github/workflows/ci.yaml"
    fork = workflow.replace("/mxjob-controller/", "/fork/", 1)
    for _, issuer, identity in found:
        assert issuer == ISSUER
        pattern = identity.replace("<version>", __version__)  # as the page says to
        assert re.search(pattern, f"{workflow}@refs/tags/v{__version__}")
        others = [f"{workflow}@refs/heads/main", f"{workflow}@refs/pull/1/merge",
                  f"{fork}@refs/tags/v{__version__}", f"{workflow}@refs/tags/v{__version__}-rc1",
                  f"{workflow}@refs/tags/v1{__version__}", f"{URL}/.github/workflows/x.yaml@refs/tags/v{__version__}"]  # fmt: skip
        assert [o for o in others if re.search(pattern, o)] == []
    assert "images.txt.sigstore.json" in section
    assert "images.txt.sigstore.json" in WORKFLOW.read_text()
