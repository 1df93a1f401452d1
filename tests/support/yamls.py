"""YAML parsed as `yaml.safe_load` and `yaml.safe_load_all` do, by libyaml when PyYAML has it:
the same objects, several times faster than the pure-Python parser on the 250-800 kB that a
kustomize build or a page's applied manifests hold."""

from typing import Any

import yaml

# libyaml's safe loader where PyYAML has it: the one `render` reads the CRD with.
from app.cli.schema import LOADER as LOADER


def load(text: str) -> Any:
    """The one document of `text`."""
    return yaml.load(text, Loader=LOADER)


def load_all(text: str) -> list[Any]:
    """The non-empty documents of the YAML stream `text`."""
    return [d for d in yaml.load_all(text, Loader=LOADER) if d]
