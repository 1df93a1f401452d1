"""The CRDs the local cluster serves besides Metacontroller's: the MXJob CRD as shipped and
stand-ins for the gang schedulers' PodGroup CRDs (see the header of each file in podgroups/)."""

from pathlib import Path

import yaml

from . import REPO
from .apiserver import ApiServer

MXJOB_CRD = REPO / "manifests" / "base" / "crd.yaml"
PODGROUP_CRDS = sorted((Path(__file__).parent / "podgroups").glob("*.yaml"))
MXJOB = "mxjobs.kubeflow.org"


def install_crds(server: ApiServer) -> None:
    """Server-side apply the MXJob CRD and the PodGroup stand-ins; wait until all serve."""
    documents = [yaml.safe_load(path.read_text()) for path in (MXJOB_CRD, *PODGROUP_CRDS)]
    server.apply(*documents)
    names = [f"crd/{document['metadata']['name']}" for document in documents]
    server.wait_established(*names)
