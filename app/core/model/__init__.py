"""The core's vocabulary: the request and the spec as typed, kinds, conditions and their reasons,
values as Kubernetes writes them, what can go wrong, and the seam the integrations
contribute through."""
