# The sync hook's image: the runtime requirements, then the package with its `mxjob-controller`
# command and the CRD `render` reads.
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
# The package, built from its sources with the base image's own setuptools and wheel (nothing is
# downloaded: the lock stays all that comes from an index), its dependencies the lock's. `render`
# checks jobs against the CRD: app/cli/crd.yaml links to manifests/base/crd.yaml, and the package
# holds the file (and `render --pod-security` the policy app/cli/pod-security.yaml links to).
# The sources go once it is installed: the hook runs from site-packages, compiled
# by pip at install time, as the root file system is read-only at run time and the hook writes
# nothing but /tmp. Its files are root's, group 0, world-readable: any UID may run it (OpenShift
# assigns one from the namespace's range, with group 0), and group 0 reads a mounted Secret
# whose mode is 0440. USER is numeric, so that Kubernetes can check runAsNonRoot.
COPY pyproject.toml requirements.txt ./package/
COPY app/ ./package/app/
COPY manifests/base/crd.yaml ./package/manifests/base/
COPY manifests/components/pod-security/policy.yaml ./package/manifests/components/pod-security/
RUN pip install --no-cache-dir --no-deps --no-build-isolation --no-index ./package \
    && rm -rf package \
    && useradd --system --uid 10001 --gid 0 --no-create-home --shell /usr/sbin/nologin mxjob

USER 10001:0
EXPOSE 8080
# `make run` without the virtualenv, listening on all interfaces; `docker run IMAGE render FILE`
# runs the render command instead.
ENTRYPOINT ["mxjob-controller"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]
