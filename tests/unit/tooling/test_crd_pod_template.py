"""scripts/crd_pod_template.py: how Kubernetes' OpenAPI becomes the CRD's pod-template schema,
on small documents written in the OpenAPI's own form (the whole output is compared against the
CRD in the API-server tier, test_crd_is_what_the_generator_writes)."""

from typing import Any

import pytest
import yaml

from scripts.crd_pod_template import BEGIN, END, overlaid, rendered, structural

REF = "#/components/schemas/"


def ref(name: str, **extra: Any) -> dict[str, Any]:
    """A property that refers to a schema, as the API server writes it."""
    return {"allOf": [{"$ref": REF + name}], **extra}


SCHEMAS: dict[str, Any] = {
    "Pod": {
        "description": "a pod",
        "type": "object",
        "required": ["containers"],
        "properties": {
            "containers": {
                "type": "array",
                "items": ref("Container", default={}),
                "x-kubernetes-list-map-keys": ["name"],
                "x-kubernetes-list-type": "map",
                "x-kubernetes-patch-merge-key": "name",
                "x-kubernetes-patch-strategy": "merge",
            },
            "overhead": {
                "type": "object",
                "additionalProperties": ref("io.k8s.apimachinery.pkg.api.resource.Quantity"),
            },
            "nodeSelector": {
                "type": "object",
                "additionalProperties": {"type": "string", "default": ""},
                "x-kubernetes-map-type": "atomic",
            },
        },
    },
    "Container": {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "default": "", "description": "its name"},
            "port": ref("io.k8s.apimachinery.pkg.util.intstr.IntOrString"),
            "started": {"$ref": REF + "io.k8s.apimachinery.pkg.apis.meta.v1.Time"},
            "replicas": {"type": "integer", "format": "int32"},
        },
        "x-kubernetes-group-version-kind": [{"group": "", "kind": "Container"}],
    },
    "Loop": {"type": "object", "properties": {"again": ref("Loop")}},
}


def test_references_are_inlined_with_only_what_a_crd_schema_keeps() -> None:
    assert structural(SCHEMAS, SCHEMAS["Pod"]) == {
        "type": "object",
        "required": ["containers"],
        "properties": {
            "containers": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string"},
                        "port": {
                            "anyOf": [{"type": "integer"}, {"type": "string"}],
                            "x-kubernetes-int-or-string": True,
                        },
                        "started": {"type": "string", "format": "date-time"},
                        "replicas": {"type": "integer", "format": "int32"},
                    },
                },
            },
            "overhead": {
                "type": "object",
                "additionalProperties": {
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "pattern": (
                        r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                        r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
                    ),
                    "x-kubernetes-int-or-string": True,
                },
            },
            "nodeSelector": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "x-kubernetes-map-type": "atomic",
            },
        },
    }


def test_a_recursive_schema_is_refused() -> None:
    with pytest.raises(SystemExit, match="recursive schema at Loop > Loop"):
        structural(SCHEMAS, ref("Loop"))


def test_the_overlay_is_merged_at_its_paths() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "containers": {
                        "type": "array",
                        "items": {"type": "object", "required": ["name"], "properties": {}},
                    }
                },
            },
            "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
        },
    }
    overlay: dict[str, dict[str, Any]] = {
        "spec.containers[]": {"required": ["name", "image"]},
        "metadata.labels": {"maxProperties": 3},
    }

    out = overlaid(schema, overlay)

    assert out["properties"]["spec"]["properties"]["containers"] == {
        "type": "array",
        "items": {"type": "object", "required": ["name", "image"], "properties": {}},
    }
    assert out["properties"]["metadata"]["properties"]["labels"] == {
        "type": "object",
        "maxProperties": 3,
    }
    assert schema["properties"]["metadata"]["properties"]["labels"] == {"type": "object"}


def test_only_the_generated_block_is_rewritten() -> None:
    crd = (
        "# hand-written header\n"
        "spec:\n"
        "  template:\n"
        f"    {BEGIN} from an older version\n"
        "    type: string\n"
        f"    {END}\n"
        "  other: kept  # comment kept\n"
    )

    out = rendered(crd, "1.32.13", {"type": "object", "required": ["a"]})

    assert out == (
        "# hand-written header\n"
        "spec:\n"
        "  template:\n"
        f"    {BEGIN} from Kubernetes v1.32.13's OpenAPI; do not edit.\n"
        "    required:\n"
        "    - a\n"
        "    type: object\n"
        f"    {END}\n"
        "  other: kept  # comment kept\n"
    )
    assert yaml.safe_load(out)["spec"]["template"] == {"type": "object", "required": ["a"]}
