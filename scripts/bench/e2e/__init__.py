"""The end-to-end benchmark on the real stack: `make bench-e2e`.

etcd + kube-apiserver (with an audit log) + the controllers, all on loopback: ours (the hook
and the real Metacontroller v4.17.2, under its defaults and under the flags the
`with-metacontroller` overlay ships) and training-operator v1.8.1 as its release ships it
(after ours: once installed, its webhook refuses MXJob writes while it is down). For each
controller and each scenario, in one run, with a fresh controller: `kubectl apply` the MXJobs,
then time the children appearing, the first status condition, and, once the bench has marked
every pod Running through the status subresource (it plays the kubelet: no process runs), the
job's Running condition; over a job's whole life, the Scheduler's exit 0 and the Succeeded
condition too. CPU seconds and peak memory of each process come from /proc; API requests from
the audit log (by user agent); hook calls from the hook's /metrics; the Go heap from the Go
process's /metrics. Then a fleet of running jobs at rest under each (scripts/bench/fleet.py).
Writes docs/performance.md between the bench-e2e markers.

    .venv/bin/python -m scripts.bench.e2e            # every scenario and the fleet, ~45 minutes
    .venv/bin/python -m scripts.bench.e2e --no-defaults  # without Metacontroller's defaults
    .venv/bin/python -m scripts.bench.e2e --quick    # 1/1/2 and 1/16/64 only, no fleet
    .venv/bin/python -m scripts.bench.e2e --configmap  # the big job's life: MX_CONFIG inline,
                                                       # the per-job ConfigMap, as shipped
"""
