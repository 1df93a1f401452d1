"""An install's manifests with the CompositeController's webhook at a loopback hook.

On the loopback stack no pod runs, so the hook the shipped CompositeController calls through its
Service (`mxjob-controller.<namespace>`) runs as a process instead: `at_loopback` points the
webhook at that process's URL and leaves every other object as built. Run as a module it is a
Helm post-renderer (`python -m tests.support.loopback URL`: manifests on stdin, out on stdout),
so that `helm install` and `helm upgrade` apply the chart's own objects the same way.
"""

import sys
from typing import Any

import yaml


def at_loopback(document: dict[str, Any], hook_url: str) -> dict[str, Any]:
    """The document, but a CompositeController's sync webhook calls `hook_url`."""
    if document.get("kind") != "CompositeController":
        return document
    webhook = document["spec"]["hooks"]["sync"]["webhook"]
    path = webhook.pop("path", "/sync")
    webhook.pop("service", None)
    webhook["url"] = f"{hook_url}{path}"
    return document


def rendered(manifests: str, hook_url: str) -> str:
    """Every document of a multi-document YAML text through `at_loopback`."""
    documents = [d for d in yaml.safe_load_all(manifests) if d]
    return yaml.safe_dump_all([at_loopback(d, hook_url) for d in documents], sort_keys=False)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.support.loopback HOOK_URL < manifests")
    sys.stdout.write(rendered(sys.stdin.read(), sys.argv[1]))
