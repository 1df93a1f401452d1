"""`mxjob-controller ttl-controller`: the watch and its timers on an event loop until SIGTERM or
SIGINT (app/cli/components.py serves /metrics and /healthz beside it)."""

import asyncio
import logging
import signal
from collections.abc import Callable

from lightkube import AsyncClient, ConfigError, KubeConfig

from app.controllers.ttl.deleter import REGISTRY, Deleter
from app.controllers.ttl.watch import watch_jobs

__all__ = ["REGISTRY", "cluster", "run"]
log = logging.getLogger("mxjob.ttl")


def cluster() -> KubeConfig | None:
    """The cluster's credentials (in-cluster, or KUBECONFIG); None, and why logged, if none."""
    try:
        return KubeConfig.from_env()
    except ConfigError as error:
        log.error(f"no cluster to talk to: {error}")
        return None


def run(config: KubeConfig, listed: Callable[[], None]) -> None:
    """Delete expired jobs until SIGTERM or SIGINT; `listed` is called after each whole list."""
    log.info("TTL controller started")
    try:
        asyncio.run(_controller(config, listed))
    finally:
        log.info("TTL controller stopped")


async def _controller(config: KubeConfig, listed: Callable[[], None]) -> None:
    loop = asyncio.get_running_loop()
    async with AsyncClient(config=config) as client:
        deleter = Deleter(client)
        watching = asyncio.create_task(watch_jobs(client, deleter, listed))
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, watching.cancel)
        try:
            await watching
        except asyncio.CancelledError:
            pass
        finally:
            await deleter.drain()
