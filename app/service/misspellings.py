"""MXJOB_* variables that name no setting, a misspelling most likely: a warning for each, naming
the setting it is closest to; the hook starts without them."""

import difflib
import re
from collections.abc import Mapping

from app.service.settings import PREFIX, Settings, variable

# MXJOB_* variables that are not the hook's: the build scripts' cache (scripts/*.sh), set where
# the tests start the hook.
NOT_SETTINGS = frozenset({"MXJOB_CACHE_DIR"})
# What Kubernetes sets for each Service of the namespace named mxjob-* in a pod with service
# links (the chart's, e.g. MXJOB_CONTROLLER_SERVICE_HOST): never a setting's name.
SERVICE_LINK = re.compile(
    r"[A-Z0-9_]+_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?"
    r"|PORT_\d+_(TCP|UDP|SCTP)(_PROTO|_PORT|_ADDR)?)"
)
# ... and {NAME}_PORT, told apart from a setting by its value.
SERVICE_ADDRESS = re.compile(r"(tcp|udp|sctp)://\S+")
# How alike a variable and a setting must be, from 0 to 1, for the setting to be suggested.
CLOSE = 0.8


def warnings(environ: Mapping[str, str]) -> list[str]:
    """One line for each MXJOB_* variable of `environ` that is not a setting."""
    known = [variable(name) for name in Settings.model_fields]
    lines = []
    for name, value in sorted(environ.items()):
        if name.startswith(PREFIX) and name not in known and not _someone_elses(name, value):
            close = difflib.get_close_matches(name, known, n=1, cutoff=CLOSE)
            hint = f"; did you mean {close[0]}?" if close else ""
            lines.append(f"{name} is not a setting and is ignored{hint}")
    return lines


def _someone_elses(name: str, value: str) -> bool:
    if name in NOT_SETTINGS or SERVICE_LINK.fullmatch(name):
        return True
    return name.endswith("_PORT") and bool(SERVICE_ADDRESS.fullmatch(value))
