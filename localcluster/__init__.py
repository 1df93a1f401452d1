"""A real Kubernetes control plane on loopback for tests, `make demo` and the benchmarks.

etcd and kube-apiserver (`apiserver`), the real Metacontroller and the real hook (`realstack`),
all of them together with our CRDs installed (`stack`), a REST client (`rest`), a kubelet
stand-in that reports pod status (`kubelet`), a server as a child process (`processes`),
waiting on a condition (`waiting`), a free loopback port (`ports`) and what can go wrong
(`errors`). The binaries come from scripts/ (`buildscript`, `binaries`).
"""

from pathlib import Path

# The checkout this package is in: the scripts that build the binaries, the manifests installed.
REPO = Path(__file__).resolve().parents[1]
