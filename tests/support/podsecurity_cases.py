"""Pod templates that a Pod Security level refuses, one field each, made from
examples/single-worker.yaml's Worker (which `restricted` admits): what the pod-security policy
and `render --pod-security` must refuse, at which levels, naming which field."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.support import REPO

EXAMPLES = REPO / "examples"
# Every file of examples/ that holds an MXJob (queues.yaml holds Kueue's queues only).
JOB_EXAMPLES = sorted(p for p in EXAMPLES.rglob("*.yaml") if "\nkind: MXJob\n" in p.read_text())
Spec = dict[str, Any]
C = "spec.containers[mxnet]."


@dataclass(frozen=True)
class Case:
    id: str
    change: Callable[[Spec], Any]  # applied to the Worker's pod spec
    refused_at: tuple[str, ...]  # the levels that refuse it
    field: str  # under the template, as the message names it


def _sc(spec: Spec) -> Spec:
    return spec["containers"][0]["securityContext"]  # type: ignore[no-any-return]


def _both(name: str, change: Callable[[Spec], Any], field: str) -> Case:
    return Case(name, change, ("baseline", "restricted"), field)


def _restricted(name: str, change: Callable[[Spec], Any], field: str) -> Case:
    return Case(name, change, ("restricted",), field)


INIT = {"name": "init", "image": "busybox", "securityContext": {"privileged": True}}
CASES = [
    _both("privileged", lambda s: _sc(s).update(privileged=True), C + "securityContext.privileged"),
    _both(
        "privileged-init",
        lambda s: s.update(initContainers=[INIT]),
        "spec.initContainers[init].securityContext.privileged",
    ),
    _both("hostNetwork", lambda s: s.update(hostNetwork=True), "spec.hostNetwork"),
    _both("hostPID", lambda s: s.update(hostPID=True), "spec.hostPID"),
    _both("hostIPC", lambda s: s.update(hostIPC=True), "spec.hostIPC"),
    _both(
        "hostPath",
        lambda s: s.update(volumes=[{"name": "root", "hostPath": {"path": "/"}}]),
        "spec.volumes",
    ),
    _both(
        "hostPort",
        lambda s: s["containers"][0].update(ports=[{"containerPort": 80, "hostPort": 80}]),
        C + "ports",
    ),
    _both(
        "SYS_ADMIN",
        lambda s: _sc(s)["capabilities"].update(add=["SYS_ADMIN"]),
        C + "securityContext.capabilities.add",
    ),
    _restricted(
        "CHOWN",
        lambda s: _sc(s)["capabilities"].update(add=["CHOWN"]),
        C + "securityContext.capabilities.add",
    ),
    _both(
        "seccomp-unconfined",
        lambda s: s["securityContext"].update(seccompProfile={"type": "Unconfined"}),
        "spec.securityContext.seccompProfile.type",
    ),
    _both(
        "seccomp-unconfined-container",
        lambda s: _sc(s).update(seccompProfile={"type": "Unconfined"}),
        C + "securityContext.seccompProfile.type",
    ),
    _both(
        "selinux-type",
        lambda s: _sc(s).update(seLinuxOptions={"type": "spc_t"}),
        C + "securityContext.seLinuxOptions",
    ),
    _both(
        "selinux-user",
        lambda s: s["securityContext"].update(seLinuxOptions={"user": "root"}),
        "spec.securityContext.seLinuxOptions",
    ),
    _both(
        "apparmor-unconfined",
        lambda s: _sc(s).update(appArmorProfile={"type": "Unconfined"}),
        C + "securityContext.appArmorProfile.type",
    ),
    _both(
        "unsafe-sysctl",
        lambda s: s["securityContext"].update(sysctls=[{"name": "kernel.msgmax", "value": "1"}]),
        "spec.securityContext.sysctls",
    ),
    _restricted("root-user", lambda s: _sc(s).update(runAsUser=0), C + "securityContext.runAsUser"),
    _restricted(
        "root-user-pod",
        lambda s: s["securityContext"].update(runAsUser=0),
        "spec.securityContext.runAsUser",
    ),
    _restricted(
        "privilege-escalation",
        lambda s: _sc(s).pop("allowPrivilegeEscalation"),
        C + "securityContext.allowPrivilegeEscalation",
    ),
    _restricted(
        "no-drop-all", lambda s: _sc(s).pop("capabilities"), C + "securityContext.capabilities.drop"
    ),
    _restricted(
        "runAsNonRoot-unset",
        lambda s: s["securityContext"].pop("runAsNonRoot"),
        C + "securityContext.runAsNonRoot",
    ),
    _restricted(
        "runAsNonRoot-false",
        lambda s: _sc(s).update(runAsNonRoot=False),
        C + "securityContext.runAsNonRoot",
    ),
    _restricted(
        "seccomp-unset",
        lambda s: s["securityContext"].pop("seccompProfile"),
        C + "securityContext.seccompProfile.type",
    ),
    _restricted(
        "nfs-volume",
        lambda s: s.update(volumes=[{"name": "data", "nfs": {"server": "nfs", "path": "/"}}]),
        "spec.volumes",
    ),
    Case("restricted-clean", lambda s: _sc(s).update(runAsUser=10001), (), ""),
]
