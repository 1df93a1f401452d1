"""What a value costs in a child and in Metacontroller's copies of it, as (bytes, `{`/`[`, `,`):
its JSON as Go writes it, that JSON as a last-applied string, and its managedFields; and what
parsing a JSON body costs in memory, estimated from its text before parsing it: the hook refuses
a body over PARSE_BUDGET (app/service/replies.py), and the size rule admits a job only if every
sync request of it is well within that budget (app/core/validate/sizerule.py)."""

import json
from typing import Any

MiB = 1024 * 1024
# The budget: the costliest bodies it admits peak within the 512 MiB the hook promises
# (docs/security.md#limits, measured by tests/http/test_parse_memory.py).
PARSE_BUDGET = 480 * MiB
PARSE_COST_PER_CONTAINER = 112
PARSE_COST_PER_VALUE = 264


def parse_cost(body: bytes | bytearray) -> int:
    """An upper estimate of the memory, in bytes, that parsing `body` takes at its peak: JSON
    costs memory by its values, not its bytes, so `cost_of` its `{`/`[`, its `,` and its
    length (docs/security.md#limits)."""
    containers = body.count(b"{") + body.count(b"[")
    values = body.count(b",")
    return cost_of(containers, values, len(body))


def cost_of(containers: int, values: int, size: int) -> int:
    """parse_cost of a text of `size` bytes holding `containers` `{` and `[` and `values` `,`."""
    return PARSE_COST_PER_CONTAINER * containers + PARSE_COST_PER_VALUE * values + size


# managedFields (fieldsV1) of a template: per field `"f:<key>":{},` besides the key's JSON,
# 7 more (`".":{},`) where the field is an object; per entry of a keyed list
# `"k:<key fields' JSON>":{".":{},...},` besides that JSON string.
FIELD_BYTES = 6


OBJECT_FIELD_BYTES = 7


ENTRY_BYTES = 11


# The fields that key the entries of a pod spec's keyed lists (containers, env, ports, volumes,
# ...): one union for every list, which only over-counts.
_KEY_FIELDS = frozenset(
    {"name", "containerPort", "port", "protocol", "mountPath", "devicePath", "ip",
     "topologyKey", "whenUnsatisfiable"}
)  # fmt: skip


# Go's encoding/json escapes these in strings; Python's json module writes them as they are.
_GO_ESCAPES = str.maketrans({c: f"\\u{ord(c):04x}" for c in "<>&\u2028\u2029"})


# Compact JSON as Go writes it, less the escapes above: `json.dumps(value, separators=(",", ":"))`
# without making an encoder on every call.
_GO_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


Copies = tuple[int, int, int]


def copies(value: Any) -> tuple[int, int, int]:
    """`value` in a child and in Metacontroller's copies of it, as (bytes, `{`/`[`, `,`): its
    JSON as Go writes it, that JSON as a last-applied annotation's string, and its
    managedFields (`_fields`; docs/reliability.md#the-size-rules-estimates)."""
    text = _go_json(value)
    size, brackets, commas = _fields(value)
    return (
        2 * len(text.encode()) + text.count('"') + text.count("\\") + size,
        2 * (text.count("{") + text.count("[")) + brackets,
        2 * text.count(",") + commas,
    )


def sum_copies(*copies: Copies) -> Copies:
    return (
        sum(c[0] for c in copies),
        sum(c[1] for c in copies),
        sum(c[2] for c in copies),
    )


def _go_json(value: Any) -> str:
    """`value`'s compact JSON as Go's encoding/json writes it."""
    return _GO_COMPACT.encode(value).translate(_GO_ESCAPES)


def _fields(value: Any) -> tuple[int, int, int]:
    """A managedFields entry's fieldsV1 for `value`, from above, as (bytes, `{`/`[`, `,`): an
    entry per key of every object and per object of a keyed list; scalars and atomic lists add
    nothing (docs/reliability.md#the-size-rules-estimates)."""
    size = brackets = commas = 0
    if isinstance(value, dict):
        for key, item in value.items():
            text = str(key)
            inner = _fields(item)
            opens = isinstance(item, dict) or (isinstance(item, list) and _has_objects(item))
            size += (
                len(_go_json(key).encode())
                + FIELD_BYTES
                + (OBJECT_FIELD_BYTES if isinstance(item, dict) else 0)
                + inner[0]
            )
            brackets += 1 + text.count("{") + text.count("[") + opens + inner[1]
            commas += 1 + text.count(",") + opens + inner[2]
    elif isinstance(value, list):
        for entry in value:
            if not isinstance(entry, dict):
                continue
            key = _go_json(
                {
                    k: v
                    for k, v in entry.items()
                    if k in _KEY_FIELDS and not isinstance(v, dict | list)
                }
            )
            inner = _fields(entry)
            size += len(_go_json("k:" + key).encode()) + ENTRY_BYTES + OBJECT_FIELD_BYTES + inner[0]
            brackets += 2 + key.count("{") + key.count("[") + inner[1]
            commas += 2 + key.count(",") + inner[2]
    return size, brackets, commas


def _has_objects(items: list[Any]) -> bool:
    return any(isinstance(item, dict) for item in items)
