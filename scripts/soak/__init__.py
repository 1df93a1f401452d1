"""Soak the sync hook on loopback: `make soak` (or `python -m scripts.soak`).

Starts `python -m app serve` on 127.0.0.1 with a frozen clock, holds a fixed number of
concurrent clients sending a weighted mix of sync requests (built with tests/support/jobs.py and
the benchmark's workloads, from a 1-worker job to a 1/100/1000 one as Metacontroller sends it
with the job's ConfigMap), checks every answer
byte for byte against the core's own answer, restarts the service half-way (SIGTERM, then a
new process on the same port: requests in flight must finish, clients retry refused
connections as Metacontroller would), and reports errors, latency percentiles and the
server's resident memory (from /proc). Bounded in time and in count; exits non-zero on any
error. Prints a Markdown report for docs/reliability.md.
"""
