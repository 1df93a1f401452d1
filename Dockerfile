# The sync hook's image: the runtime requirements, the `app` package and the CRD `render` reads.
# Checked without a Docker engine by tests/manifests/test_dockerfile.py (hadolint and a parse of this file).
# The base by its multi-arch index digest as well as its tag: a re-pushed tag cannot change
# what is built (docs/security.md, "Supply chain", says where the digest comes from).
FROM python:3.11.10-slim-bookworm@sha256:840e180ebcc6e5c8efab209c43f5e40fd2af98cb49db5c7103c90539c56bb30e

# `make image` and the release workflow add org.opencontainers.image.version (app.__version__).
LABEL org.opencontainers.image.title="mxjob-controller" \
      org.opencontainers.image.description="Metacontroller sync hook for Kubeflow MXJobs" \
      org.opencontainers.image.licenses="Apache-2.0"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /srv/mxjob-controller

# The lock (`make lock` compiles it from requirements.txt): every package pinned with the hashes
# of its files, so pip refuses a file or a dependency the lock does not name; wheels only, so no
# package's build code runs here.
COPY requirements.lock ./
RUN pip install --no-cache-dir --require-hashes --only-binary=:all: -r requirements.lock

COPY LICENSE ./
COPY app/ ./app/
# `render` checks a job against the CRD's schema (app/cli/schema.py reads it beside app/).
COPY manifests/base/crd.yaml ./manifests/base/
# Compiled at build time: the root file system is read-only at run time, and the hook writes
# nothing but /tmp. Its files are root's, group 0, world-readable: any UID may run it (OpenShift
# assigns one from the namespace's range, with group 0), and group 0 reads a mounted Secret
# whose mode is 0440. USER is numeric, so that Kubernetes can check runAsNonRoot.
RUN python -m compileall -q app \
    && useradd --system --uid 10001 --gid 0 --no-create-home --shell /usr/sbin/nologin mxjob

USER 10001:0
EXPOSE 8080
# `make run` without the virtualenv, listening on all interfaces; `docker run IMAGE render FILE`
# runs the render command instead.
ENTRYPOINT ["python", "-m", "app"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]
