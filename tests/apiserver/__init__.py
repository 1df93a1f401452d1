"""Tests against a real kube-apiserver and etcd on loopback."""
