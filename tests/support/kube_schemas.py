"""kubernetes-validate's `validate`, with each schema file it reads parsed once per process.

kubernetes-validate (pinned in requirements-dev.txt) opens and parses a kind's schema and the
whole `_definitions.json` on every call: 13 ms an object, some 900 objects in `make fast`. Its module
function `schema_contents` is wrapped in a cache the first time `validate` is called here; what
it returns is only read (jsonschema and referencing do not change a schema), so sharing it
changes no answer. Errors are kubernetes-validate's own.
"""

import functools

import kubernetes_validate
from kubernetes_validate import utils

SchemaNotFoundError = kubernetes_validate.SchemaNotFoundError
ValidationError = kubernetes_validate.ValidationError


def validate(obj: dict[str, object], version: str) -> str:
    """`kubernetes_validate.validate(obj, version, strict=True)`: unknown fields are errors."""
    if not hasattr(utils.schema_contents, "cache_info"):
        utils.schema_contents = functools.cache(utils.schema_contents)
    return str(kubernetes_validate.validate(obj, version, strict=True))
