"""The optional components' commands: each controller, with its probe and metrics server beside
it (app/service/probes.py)."""

import logging
import logging.config
import sys
import threading

from app.service import jsonlog, probes

log = logging.getLogger("mxjob.ttl")


def ttl_controller(host: str, port: int, log_level: str) -> int:
    """Delete expired jobs until SIGTERM or SIGINT, /healthz and /metrics on `host`:`port`; 2
    at once if there are no credentials for the cluster (in-cluster, or KUBECONFIG)."""
    # Imported here: the hook's own commands need no Kubernetes client.
    from app.controllers.ttl import main as ttl

    logging.config.dictConfig(jsonlog.config(log_level))
    config = ttl.cluster()
    if config is None:
        return 2
    listed = threading.Event()
    with probes.serving(host, port, ttl.REGISTRY, listed.is_set) as serving_on:
        log.info("probes and metrics served", extra={"port": serving_on})
        ttl.run(config, listed.set)
    return 0


def kueue_status(host: str, port: int, prog: str = "mxjob-controller kueue-status") -> int:
    """Write the Workloads' status until killed, /healthz and /metrics on `host`:`port`; 2 at
    once, with a line on stderr prefixed with `prog`, if there is no cluster to talk to."""
    from app.controllers.kueuestatus import watch

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    # lightkube's transport logs every request at INFO; the writer logs what it changes.
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    from lightkube import Client, ConfigError

    try:
        client = Client(field_manager=watch.FIELD_MANAGER)
    except ConfigError as err:
        print(f"{prog}: no cluster to talk to: {err}", file=sys.stderr)
        return 2
    listed = threading.Event()
    with probes.serving(host, port, watch.REGISTRY, listed.is_set):
        watch.run(listed, client)
    return 0
