"""The checks of the pod-security policy (scripts/pod_security_policy.py writes them out).

Each is a CEL condition that is true where a pod spec breaks it: `{s}` is the pod spec of one
replica type's template, `{m}` that template's metadata, `c` a container (its containers and
initContainers). They follow the Pod Security Standards as Kubernetes v1.32 enforces them
(k8s.io/pod-security-admission/policy, check_*.go), level by level; a Windows pod
(`spec.os.name: windows`) is spared the Linux-only checks of `restricted`, as there.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    name: str  # the policy's variable: the replica types that break it
    gate: str  # the variable that turns it on: baseline, restricted, limits_<key>
    field: str  # the field named in the message, under the pod spec or the container
    rule: str  # what the field must be
    bad: str  # CEL, true where the pod spec or container breaks it
    why: str = "pss"  # the variable that ends the message


def _set(path: str, base: str = "c.securityContext") -> str:
    """`base.path` is set (every step of it)."""
    steps, parts = [base], path.split(".")
    for part in parts:
        steps.append(f"{steps[-1]}.{part}")
    return " && ".join(f"has({step})" for step in steps[1:])


def _is(path: str, base: str = "c.securityContext") -> str:
    return f"{_set(path, base)} && {base}.{path}"


# fmt: off
POD_SC = "{s}.securityContext"
BASELINE_CAPABILITIES = ["AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"]
SELINUX_TYPES = ["", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"]
SYSCTLS = ["kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"]
VOLUMES = (
    ["configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"]
)
APPARMOR = "container.apparmor.security.beta.kubernetes.io/"
LINUX = "!(has({s}.os) && {s}.os.name == 'windows')"


def _selinux(base: str) -> str:
    opts = f"{base}.seLinuxOptions"
    return (
        f"{_set('seLinuxOptions', base)} && ((has({opts}.type) && !({opts}.type in {SELINUX_TYPES!r}))"
        f" || (has({opts}.user) && {opts}.user != '') || (has({opts}.role) && {opts}.role != ''))"
    )


def _apparmor(base: str) -> str:
    return f"{_set('appArmorProfile.type', base)} && !({base}.appArmorProfile.type in ['RuntimeDefault', 'Localhost'])"


def _unconfined(base: str) -> str:
    return f"{_set('seccompProfile.type', base)} && {base}.seccompProfile.type == 'Unconfined'"


SECCOMP_OK = "['RuntimeDefault', 'Localhost']"
POD_CHECKS = [
    Check("hostNetwork", "baseline", "hostNetwork", "must not be true", "has({s}.hostNetwork) && {s}.hostNetwork"),
    Check("hostPID", "baseline", "hostPID", "must not be true", "has({s}.hostPID) && {s}.hostPID"),
    Check("hostIPC", "baseline", "hostIPC", "must not be true", "has({s}.hostIPC) && {s}.hostIPC"),
    Check("hostPathVolumes", "baseline", "volumes", "must have no hostPath volume", "has({s}.volumes) && {s}.volumes.exists(v, has(v.hostPath))"),
    Check("podHostProcess", "baseline", "securityContext.windowsOptions.hostProcess", "must not be true", _is("windowsOptions.hostProcess", POD_SC)),
    Check("podSELinux", "baseline", "securityContext.seLinuxOptions", f"type must be one of {', '.join(repr(t) for t in SELINUX_TYPES)}, user and role unset", _selinux(POD_SC)),
    Check("podAppArmor", "baseline", "securityContext.appArmorProfile.type", "must be RuntimeDefault or Localhost", _apparmor(POD_SC)),
    Check("appArmorAnnotations", "baseline", "metadata.annotations", f"{APPARMOR}* must be runtime/default or localhost/*", f"has({{m}}) && has({{m}}.annotations) && {{m}}.annotations.exists(k, k.startsWith('{APPARMOR}')" f" && !({{m}}.annotations[k] in ['', 'runtime/default'] || {{m}}.annotations[k].startsWith('localhost/')))"),
    Check("podSeccompUnconfined", "baseline", "securityContext.seccompProfile.type", "must not be Unconfined", _unconfined(POD_SC)),
    Check("sysctls", "baseline", "securityContext.sysctls", f"may name only {', '.join(SYSCTLS)}", f"{_set('sysctls', POD_SC)} && {POD_SC}.sysctls.exists(x, !(x.name in {SYSCTLS!r}))"),
    Check("volumeTypes", "restricted", "volumes", f"may be only of the types {', '.join(VOLUMES)}", "has({s}.volumes) && {s}.volumes.exists(v, !(" + " || ".join(f"has(v.{t})" for t in VOLUMES) + "))"),
    Check("podRunAsNonRootFalse", "restricted", "securityContext.runAsNonRoot", "must not be false", f"{_set('runAsNonRoot', POD_SC)} && !{POD_SC}.runAsNonRoot"),
    Check("podRunAsRoot", "restricted", "securityContext.runAsUser", "must not be 0", f"{_set('runAsUser', POD_SC)} && {POD_SC}.runAsUser == 0"),
]
CONTAINER_CHECKS = [
    Check("privileged", "baseline", "securityContext.privileged", "must not be true", _is("privileged")),
    Check("hostProcess", "baseline", "securityContext.windowsOptions.hostProcess", "must not be true", _is("windowsOptions.hostProcess")),
    Check("addedCapabilities", "baseline", "securityContext.capabilities.add", f"may add only {', '.join(BASELINE_CAPABILITIES)}", f"{_set('capabilities.add')} && c.securityContext.capabilities.add.exists(x, !(x in {BASELINE_CAPABILITIES!r}))"),
    Check("hostPorts", "baseline", "ports", "must set no hostPort", "has(c.ports) && c.ports.exists(p, has(p.hostPort) && p.hostPort != 0)"),
    Check("seLinux", "baseline", "securityContext.seLinuxOptions", f"type must be one of {', '.join(repr(t) for t in SELINUX_TYPES)}, user and role unset", _selinux("c.securityContext")),
    Check("appArmor", "baseline", "securityContext.appArmorProfile.type", "must be RuntimeDefault or Localhost", _apparmor("c.securityContext")),
    Check("procMount", "baseline", "securityContext.procMount", "must be Default", f"{_set('procMount')} && c.securityContext.procMount != 'Default'"),
    Check("seccompUnconfined", "baseline", "securityContext.seccompProfile.type", "must not be Unconfined", _unconfined("c.securityContext")),
    Check("privilegeEscalation", "restricted", "securityContext.allowPrivilegeEscalation", "must be false", f"{LINUX} && !({_set('allowPrivilegeEscalation')} && !c.securityContext.allowPrivilegeEscalation)"),
    Check("runAsNonRoot", "restricted", "securityContext.runAsNonRoot", "must be true, here or in the pod's securityContext", f"({_set('runAsNonRoot')}) ? !c.securityContext.runAsNonRoot : !({_set('runAsNonRoot', POD_SC)} && {POD_SC}.runAsNonRoot)"),
    Check("runAsRoot", "restricted", "securityContext.runAsUser", "must not be 0", f"{_set('runAsUser')} && c.securityContext.runAsUser == 0"),
    Check("seccomp", "restricted", "securityContext.seccompProfile.type", "must be RuntimeDefault or Localhost, here or in the pod's securityContext", f"{LINUX} && (({_set('seccompProfile.type')}) ? !(c.securityContext.seccompProfile.type in {SECCOMP_OK})" f" : !({_set('seccompProfile.type', POD_SC)} && {POD_SC}.seccompProfile.type in {SECCOMP_OK}))"),
    Check("capabilitiesDropAll", "restricted", "securityContext.capabilities.drop", "must include ALL", f"{LINUX} && !({_set('capabilities.drop')} && 'ALL' in c.securityContext.capabilities.drop)"),
    Check("capabilitiesAddRestricted", "restricted", "securityContext.capabilities.add", "may add only NET_BIND_SERVICE", f"{LINUX} && {_set('capabilities.add')} && c.securityContext.capabilities.add.exists(x, x != 'NET_BIND_SERVICE')"),
]


def _allowed(key: str, field: str) -> str:
    return (
        f"has({{s}}.{field}) && {{s}}.{field} != '' && !({{s}}.{field} in variables.allowed_{key})"
    )


# The platform's allow-lists: a key of the ConfigMap, comma-separated names; a key left out
# allows any value, a key set empty allows none (the field must stay unset).
ALLOW_LISTS = ["serviceAccountNames", "nodeNames", "schedulerNames", "priorityClassNames", "tolerationKeys"]
POD_CHECKS += [
    Check("serviceAccount", "limits_serviceAccountNames", "serviceAccountName", "must be one of the allow-list's serviceAccountNames", f"({_allowed('serviceAccountNames', 'serviceAccountName')}) || ({_allowed('serviceAccountNames', 'serviceAccount')})", "platform"),
    Check("nodeName", "limits_nodeNames", "nodeName", "must be unset or one of the allow-list's nodeNames", _allowed("nodeNames", "nodeName"), "platform"),
    Check("schedulerName", "limits_schedulerNames", "schedulerName", "must be unset or one of the allow-list's schedulerNames", _allowed("schedulerNames", "schedulerName"), "platform"),
    Check("priorityClass", "limits_priorityClassNames", "priorityClassName", "must be unset or one of the allow-list's priorityClassNames", _allowed("priorityClassNames", "priorityClassName"), "platform"),
    Check("tolerations", "limits_tolerationKeys", "tolerations", "must each name a key of the allow-list's tolerationKeys", "has({s}.tolerations) && {s}.tolerations.exists(x, !has(x.key) || !(x.key in variables.allowed_tolerationKeys))", "platform"),
]
# fmt: on
