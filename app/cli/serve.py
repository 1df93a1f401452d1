"""The `serve` command: the settings from the environment, every one listed by `--help` from
app/service/settings.py, then the hook until SIGTERM or Ctrl-C."""

import os
import sys
import textwrap

from app.service import settings
from app.service.errors import CannotListen, SettingsError

# Exit codes of `serve`: a setting, --host or --port to fix.
BAD_SETTING = 2
WIDTH = 79


def settings_help() -> str:
    """Every setting: its variable, what it does, what it allows and its default."""
    lines = ["settings, from the environment (an error names the variable to fix; exit 2):"]
    for name, field in settings.Settings.model_fields.items():
        lines.append(f"  {settings.variable(name)}")
        lines += _wrapped(_sentence(str(field.description)), 6)
        lines += _wrapped(
            _sentence(f"{settings.allowed(name)}; default: {settings.default(name)}"), 6
        )
    lines += _wrapped(
        "A variable MXJOB_* that is no setting is warned about (a misspelling?), and the hook "
        "starts without it.",
        0,
    )
    return "\n".join(lines)


def _sentence(text: str) -> str:
    return f"{text[0].upper()}{text[1:]}."


def _wrapped(text: str, indent: int) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=" " * indent, subsequent_indent=" " * indent)


def run(host: str, port: int, prog: str) -> int:
    """Serve the hook on `host`:`port`; 0 once stopped, 2 if a setting or the address is wrong
    (one line on stderr for each problem, each prefixed with `prog`)."""
    # Imported here: `render` starts without uvicorn.
    from app.service import misspellings, server

    try:
        config = settings.from_env()
        server.run(config, host, port, misspellings.warnings(os.environ))
    except (SettingsError, CannotListen) as err:
        for line in str(err).splitlines():
            print(f"{prog}: {line}", file=sys.stderr)
        return BAD_SETTING
    return 0
