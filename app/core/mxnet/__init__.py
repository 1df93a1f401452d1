"""What an MXJob's pods are made of: the children's names and labels, MX_CONFIG and its length,
how the pods read the job's ConfigMap, and a container's environment as the kubelet gives it."""
