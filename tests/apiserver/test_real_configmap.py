"""MX_CONFIG through the job's ConfigMap under the real Metacontroller: the ConfigMap is written
before any pod, owned like the other children, and every pod's env, resolved from the objects
the API server stores as the kubelet resolves it, gives each process the environment release
0.1.0 gave it (tests/fixtures/env-0.1.0.json, every variable) and the one before it
(tests/fixtures/env-before-configmap.json)."""

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from app.core.mxnet import kubeenv, mxconfig
from localcluster.ports import free_port
from localcluster.realstack import install_controller
from localcluster.rest import Rest
from localcluster.waiting import wait_for
from tests.support import FIXTURES
from tests.support.golden_cases import released_0_1_0
from tests.support.scenario import Job, State, apply_job, expected_children, manifest

from .conftest import RealStack

EXAMPLE = "examples/dist-cpu.yaml"
BEFORE = json.loads((FIXTURES / "env-before-configmap.json").read_text())
RELEASED = json.loads((FIXTURES / "env-0.1.0.json").read_text())
SHARED = {variable for variable, _ in mxconfig.SHARED_PARTS}
JSON = "application/json"


def _version(child: dict[str, Any]) -> int:
    # Opaque to clients in general; etcd3's are one increasing counter of every write, and
    # these children are written once (no kubelet or scheduler touches them here).
    return int(child["metadata"]["resourceVersion"])


def test_the_configmap_comes_first_and_processes_read_what_they_did(
    real_stack: RealStack, rest: Rest, namespace: str
) -> None:
    document = manifest(EXAMPLE)
    names = expected_children(document)
    job = apply_job(real_stack.apiserver, rest, namespace, document)
    job.reaches(
        State({"Created": "MXJobCreated"}, dict.fromkeys(names, "Pending"), tuple(names)),
        "every pod and Service",
    )

    children = job.children()
    config_map = children.pop(f"ConfigMap/{mxconfig.config_map_name(job.name)}")
    (owner,) = config_map["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("MXJob", job.name, True)
    assert set(config_map["data"]) == set(mxconfig.JOB_ENV)
    pods = [c for key, c in children.items() if key.startswith("Pod/")]
    assert _version(config_map) < min(_version(p) for p in pods)

    maps = {config_map["metadata"]["name"]: config_map}
    read = {}
    for pod in pods:
        for container in pod["spec"]["containers"]:
            env = kubeenv.resolve(container, maps)
            key = f"{pod['metadata']['name']}/{container['name']}"
            read[key] = sorted([k, v] for k, v in env.items())
    # In no set order: the kubelet gathers a container's variables in a map.
    assert read == RELEASED[EXAMPLE]
    without_shared = {k: [kv for kv in v if kv[0] not in SHARED] for k, v in read.items()}
    assert without_shared == {k: sorted(v) for k, v in BEFORE[EXAMPLE].items()}


@contextmanager
def answering_as_release_0_1_0(hook_url: str, namespace: str) -> Iterator[str]:
    """A loopback proxy in front of the hook that answers the jobs of `namespace` as release
    0.1.0 did (tests/support/golden_cases.py's `released_0_1_0`): the job's ConfigMap with the keys
    `cluster` and `labels`, every pod reading them through `configMapKeyRef`. Its URL."""
    client = httpx.Client(base_url=hook_url, timeout=120, trust_env=False)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            sent = client.post(self.path, content=body, headers={"Content-Type": JSON})
            answer = sent.content
            parent = json.loads(body).get("parent", {}).get("metadata", {})
            if sent.status_code == 200 and parent.get("namespace") == namespace:
                answer = json.dumps(released_0_1_0(json.loads(answer))).encode()
            self.send_response(sent.status_code)
            self.send_header("Content-Type", JSON)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        client.close()


def _layout(pod: dict[str, Any]) -> str:
    container = pod["spec"]["containers"][0]
    if "envFrom" in container:
        return "envFrom"
    return str(container["env"][0]["valueFrom"]["configMapKeyRef"]["key"])


def test_a_job_of_release_0_1_0_keeps_its_pods_and_its_keys(
    real_stack: RealStack, rest: Rest, namespace: str
) -> None:
    """Created by 0.1.0, synced by this version: no pod replaced for it, the ConfigMap not
    written, and a pod deleted by someone made again as 0.1.0 made it, reading what the pod
    it replaces read."""
    job, before = _created_by_release_0_1_0(real_stack, rest, namespace)
    key = f"ConfigMap/{mxconfig.config_map_name(job.name)}"
    assert set(before[key]["data"]) == {"cluster", "labels"}
    pods = {k: c for k, c in before.items() if k.startswith("Pod/")}
    assert {_layout(p) for p in pods.values()} == {"cluster"}

    # This version syncs the job from here on; someone deletes a worker (ExitCode: replaced).
    gone = f"Pod/{job.name}-worker-1"
    real_stack.apiserver.kubectl(
        "delete", "pod", gone.split("/")[1], f"--namespace={namespace}", "--wait=false"
    )

    after = _made_again(job, pods, gone)
    kept = {k: c["metadata"]["uid"] for k, c in after.items() if k in pods and k != gone}
    assert kept == {k: c["metadata"]["uid"] for k, c in pods.items() if k != gone}
    assert after[key]["metadata"]["resourceVersion"] == before[key]["metadata"]["resourceVersion"]
    assert after[key]["data"] == before[key]["data"]
    (new_key,) = [
        k
        for k, c in after.items()
        if k.startswith("Pod/")
        and c["metadata"]["uid"] not in {p["metadata"]["uid"] for p in pods.values()}
    ]
    new_pod = after[new_key]
    assert _layout(new_pod) == "cluster"
    maps = {after[key]["metadata"]["name"]: after[key]}
    env = sorted([k, v] for k, v in kubeenv.resolve(new_pod["spec"]["containers"][0], maps).items())
    assert env == RELEASED[EXAMPLE][f"{job.name}-worker-1/mxnet"]
    # ...and the pods 0.1.0 made still find their keys.
    for name, pod in ((k, after[k]) for k in kept):
        read = sorted(
            [k, v] for k, v in kubeenv.resolve(pod["spec"]["containers"][0], maps).items()
        )
        assert read == RELEASED[EXAMPLE][f"{name.split('/')[1]}/mxnet"]


def _created_by_release_0_1_0(
    real_stack: RealStack, rest: Rest, namespace: str
) -> tuple[Job, dict[str, dict[str, Any]]]:
    """The example job as release 0.1.0's hook built it, and its children then; this version's
    hook answers again afterwards."""
    document = manifest(EXAMPLE)
    names = expected_children(document)
    try:
        with answering_as_release_0_1_0(real_stack.hook.url, namespace) as released:
            install_controller(real_stack.apiserver, released)
            job = apply_job(real_stack.apiserver, rest, namespace, document)
            job.reaches(
                State({"Created": "MXJobCreated"}, dict.fromkeys(names, "Pending"), tuple(names)),
                "every pod and Service, from release 0.1.0",
            )
            return job, job.children()
    finally:
        install_controller(real_stack.apiserver, real_stack.hook.url)


def _made_again(job: Job, pods: dict[str, Any], gone: str) -> dict[str, dict[str, Any]]:
    """The job's children once the deleted pod `gone` is made again (a new name or uid)."""

    def replaced() -> dict[str, dict[str, Any]]:
        now = job.children()
        new = [k for k, c in now.items() if k.startswith("Pod/") and k not in pods]
        new += (
            [gone]
            if gone in now and now[gone]["metadata"]["uid"] != pods[gone]["metadata"]["uid"]
            else []
        )
        return now if new else {}

    return wait_for(replaced, "the deleted worker made again by this version")
