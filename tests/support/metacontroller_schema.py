"""Metacontroller's CompositeController (metacontroller.k8s.io/v1alpha1) as a JSON schema, every
object closed so that a misspelt field fails instead of being pruned."""

from typing import Any


def closed(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    """An object schema of these properties and no other."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


STRING = {"type": "string"}
INT32 = {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1}
GO_DURATION = {"type": "string", "pattern": r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"}
REFERENCE = closed({"name": STRING, "namespace": STRING, "key": STRING}, "name", "namespace")
# Metacontroller's CompositeController (metacontroller.k8s.io/v1alpha1) as its CRD
# (deploy/helm/metacontroller/crds/metacontroller-crds-v1.yaml) and docs/src/api define it, with
# every object closed so that a misspelt field fails instead of being pruned.
WEBHOOK = closed(
    {
        "url": STRING,
        "timeout": GO_DURATION,
        "path": {"type": "string", "pattern": "^/"},
        "service": closed(
            {"name": STRING, "namespace": STRING, "port": INT32, "protocol": STRING},
            "name",
            "namespace",
        ),
        "etag": closed(
            {
                "enabled": {"type": "boolean"},
                "cacheTimeoutSeconds": INT32,
                "cacheCleanupSeconds": INT32,
            }
        ),
        "caBundle": closed({"inline": STRING, "secretRef": REFERENCE, "configMapRef": REFERENCE}),
        "responseUnMarshallMode": {"enum": ["loose", "strict"]},
    }
)
HOOKS = ("customize", "sync", "finalize", "preUpdateChild", "postUpdateChild")
HOOK = closed({"version": {"enum": ["v1", "v2"]}, "webhook": WEBHOOK})
CHILD = closed(
    {
        "apiVersion": STRING,
        "resource": STRING,
        "updateStrategy": closed(
            {
                "method": {
                    "enum": ["OnDelete", "Recreate", "InPlace", "RollingRecreate", "RollingInPlace"]
                },
                "statusChecks": closed(
                    {
                        "conditions": {
                            "type": "array",
                            "items": closed(
                                {"type": STRING, "status": STRING, "reason": STRING}, "type"
                            ),
                        }
                    }
                ),
            }
        ),
    },
    "apiVersion",
    "resource",
)
COMPOSITE_CONTROLLER = closed(
    {
        "apiVersion": {"const": "metacontroller.k8s.io/v1alpha1"},
        "kind": {"const": "CompositeController"},
        # Cluster-scoped: a namespace here would be a kustomize mistake.
        "metadata": closed(
            {"name": STRING, "labels": {"type": "object"}, "annotations": {"type": "object"}},
            "name",
        ),
        "spec": closed(
            {
                "parentResource": closed(
                    {
                        "apiVersion": STRING,
                        "resource": STRING,
                        "revisionHistory": closed(
                            {"fieldPaths": {"type": "array", "items": STRING}}
                        ),
                    },
                    "apiVersion",
                    "resource",
                ),
                "childResources": {"type": "array", "items": CHILD},
                "hooks": closed(dict.fromkeys(HOOKS, HOOK)),
                "resyncPeriodSeconds": INT32,
                "generateSelector": {"type": "boolean"},
            },
            "parentResource",
        ),
    },
    "apiVersion",
    "kind",
    "metadata",
    "spec",
)
