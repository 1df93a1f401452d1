"""Where the time goes after a pod changes: `make bench-latency`.

On the real stack (etcd, kube-apiserver with an audit log, the hook, the real Metacontroller
v4.17.2), for each scenario and setting, several times: apply one MXJob, wait for its children,
mark every pod Running (16 at a time, the Scheduler last: it decides), wait for `Running`, let
the job settle, mark the Scheduler Succeeded, wait for `Succeeded`. For each of the two
deciding pod writes, the time to the MXJob status write that carries the condition, in parts:

- `earlier sync`: a sync of the same job that was still running when the pod was written
  (Metacontroller's work queue runs one sync of a key at a time), until its last request;
- `to the hook`: the rest until the hook received the sync that saw the pod (informer
  delivery, work queue, Metacontroller reading its cache and encoding the request);
- `hook`: the hook answering (its log's `duration_ms`);
- `children`: Metacontroller decoding the answer, comparing and applying children (its
  requests in that window are counted);
- `reading the job`: its status update starts with a GET of the job (`AtomicStatusUpdate`),
  then compares the status;
- `status write`: the `mxjobs/status` update, received to answered.

Times from the audit log (the pod's status write, Metacontroller's requests and the MXJob
status update, microseconds; the update's body, at level `Request`, tells which one carries
the condition) and the hook's log (each answer's duration; its line can come tens of ms late,
so each answer is placed at the latest at the GET that ends its sync, `placed`). With
`--trace` Metacontroller runs with `--zap-log-level=4` (not the shipped level: it logs more),
and its `Sync` line splits `to the hook` into the wait for a worker and the worker's own work
before it calls the hook.

    .venv/bin/python -m scripts.bench.latency                  # typical and 1/100/1000, 5 times
    .venv/bin/python -m scripts.bench.latency --trace          # with the worker's share
    .venv/bin/python -m scripts.bench.latency --scenarios small --repeat 1  # the smoke test's
    .venv/bin/python -m scripts.bench.latency --replica-services all,scheduler
        # every Service, then the Scheduler's only, job by job (docs/behaviour.md)
"""

# The parts of one latency, in the order they pass, as named above.
PARTS = ("earlier sync", "to the hook", "hook", "children", "reading the job", "status write")
TRACE_PARTS = ("waiting for a worker", "worker before the hook")
AGENT = "mxjob-bench-latency"  # the bench's user agent: its pod writes in the audit log
