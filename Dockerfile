# syntax=docker/dockerfile:1
# The impersync controller image. Its stages:
#   tools:   helm and kustomize built with Go from the Go module proxy, at the versions
#            scripts/tool-binaries pins (renders in the cluster match renders in the tests), and
#            impersync-jsonnet from tools/jsonnet (go-jsonnet at Argo CD v3.6.1's version);
#   health:  Argo CD's bundled health checks (resource_customizations/**/health.lua) from the
#            release scripts/health-scripts pins, its Go module zip checked against its sha256:
#            the controller's default health library;
#   build:   the TypeScript compiled to dist/ (npm ci with dev dependencies, npm run build);
#   runtime: Node.js 24 (slim), git, tini, the production node_modules and dist/. Runs as uid 65532.
#
# Read-only root filesystem: the process writes only under /var/cache/impersync (Git clones,
# renders), /tmp and $HOME (helm and git state); the Deployment mounts an emptyDir on each.
#
# Build: docker build -t impersync:dev .
# Run outside a cluster (needs a kubeconfig): docker run --rm -v ~/.kube:/home/impersync/.kube:ro impersync:dev run --kubeconfig /home/impersync/.kube/config
# Base images are referenced by tag; pin them by digest (name:tag@sha256:...) in a release pipeline.

ARG NODE_VERSION=24
ARG DEBIAN_RELEASE=bookworm
# kustomize v5.8.2+ ask for Go 1.27.
ARG GO_VERSION=1.27
# Keep in step with scripts/tool-binaries (Argo CD v3.6.1's pins).
ARG HELM_VERSION=v4.3.1
ARG KUSTOMIZE_VERSION=v5.8.3

FROM golang:${GO_VERSION}-${DEBIAN_RELEASE} AS tools
ARG HELM_VERSION
ARG KUSTOMIZE_VERSION
ENV CGO_ENABLED=0 GOFLAGS=-mod=mod GOBIN=/out
# The -X flags give `helm version` and `kustomize version` their real versions. kustomize is built
# in a scratch module, as scripts/tool-binaries says why: the Go module proxy does not serve the
# k8s.io/kube-openapi pseudo-version v5.8.3's go.mod names, so the next one it serves is required.
RUN go install -trimpath \
      -ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=${HELM_VERSION} -X helm.sh/helm/v4/internal/version.metadata=" \
      "helm.sh/helm/v4/cmd/helm@${HELM_VERSION}" \
 && mkdir /tmp/kustomize-build && cd /tmp/kustomize-build && go mod init impersync.local/kustomize-build \
 && go get "sigs.k8s.io/kustomize/kustomize/v5@${KUSTOMIZE_VERSION}" k8s.io/kube-openapi@v0.0.0-20261014044854-ca3452a79603 \
 && go build -trimpath -o /out/kustomize \
      -ldflags="-s -w -X sigs.k8s.io/kustomize/api/provenance.version=${KUSTOMIZE_VERSION}" \
      sigs.k8s.io/kustomize/kustomize/v5 \
 && /out/helm version --short && /out/kustomize version
# impersync-jsonnet: the repository's own program, its go.sum checked (no -mod=mod).
COPY tools/jsonnet /src/tools/jsonnet
RUN cd /src/tools/jsonnet \
 && GOFLAGS=-mod=readonly go build -trimpath -ldflags="-s -w" -o /out/impersync-jsonnet . \
 && echo '{"file":"/src/tools/jsonnet/probe.jsonnet","root":"/src"}' >/tmp/req \
 && echo '{apiVersion: "v1", kind: "List", items: []}' >/src/tools/jsonnet/probe.jsonnet \
 && /out/impersync-jsonnet </tmp/req

FROM golang:${GO_VERSION}-${DEBIAN_RELEASE} AS health
# The Go module proxy to download from (the script takes GOPROXY's first entry).
ARG GOPROXY
# unzip for the module zip (curl, sha256sum and flock are in the image already).
RUN apt-get update \
 && apt-get install -y --no-install-recommends unzip \
 && rm -rf /var/lib/apt/lists/*
COPY scripts/health-scripts /src/scripts/health-scripts
# Only the scripts go into the image: Argo CD's test tables and test data stay behind.
RUN dir="$(IMPERSYNC_CACHE=/cache bash /src/scripts/health-scripts | tail -n 1)" \
 && mkdir -p /out \
 && cp -r "$dir" /out/health-scripts \
 && find /out/health-scripts \( -name testdata -o -name health_test.yaml \) -prune -exec rm -rf {} + \
 && test -f /out/health-scripts/cert-manager.io/Certificate/health.lua

FROM node:${NODE_VERSION}-${DEBIAN_RELEASE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# Dev dependencies include the pinned `node` package, whose install script must run.
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM node:${NODE_VERSION}-${DEBIAN_RELEASE} AS deps
WORKDIR /src
COPY package.json package-lock.json ./
# Production dependencies only; none of them needs an install script.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:${NODE_VERSION}-${DEBIAN_RELEASE}-slim AS runtime
# git (with ssh for git@ URLs) renders Application sources; util-linux's prlimit bounds the memory
# and file sizes of git, helm and kustomize in the renderer; gpg verifies commit signatures when an
# AppProject asks (signatureKeys, sourceIntegrity); tini is PID 1 (see ENTRYPOINT).
# Two users: the controller's (65532) and the renderer's (65533: its Deployment runs as its own uid,
# and ssh refuses a uid without a passwd entry; its HOME is an emptyDir, so none is created here).
RUN apt-get update \
 && apt-get install -y --no-install-recommends git openssh-client ca-certificates tini util-linux gpg \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 impersync \
 && useradd --uid 65532 --gid 65532 --home-dir /home/impersync --create-home --shell /usr/sbin/nologin impersync \
 && groupadd --gid 65533 impersync-renderer \
 && useradd --uid 65533 --gid 65533 --home-dir /home/impersync-renderer --no-create-home --shell /usr/sbin/nologin impersync-renderer \
 && mkdir -p /var/cache/impersync \
 && chown 65532:65532 /var/cache/impersync
COPY --from=tools /out/helm /out/kustomize /out/impersync-jsonnet /usr/local/bin/
COPY --from=health /out/health-scripts /usr/share/impersync/health-scripts
WORKDIR /app
COPY --from=deps /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
COPY deploy/crds ./deploy/crds
ENV NODE_ENV=production \
    HOME=/home/impersync \
    IMPERSYNC_CACHE_DIR=/var/cache/impersync \
    XDG_CACHE_HOME=/var/cache/impersync \
    IMPERSYNC_TOOLS_DIR=/usr/local/bin \
    IMPERSYNC_HEALTH_SCRIPTS_DIR=/usr/share/impersync/health-scripts \
    HELM_CACHE_HOME=/var/cache/impersync/helm/cache \
    HELM_CONFIG_HOME=/var/cache/impersync/helm/config \
    HELM_DATA_HOME=/var/cache/impersync/helm/data \
    TMPDIR=/tmp
USER 65532:65532
EXPOSE 8080
# PID 1 is tini, not node: the kernel gives PID 1 no default signal actions, and the controller
# spawns git, ssh, helm and kustomize, whose orphaned children would be reparented to PID 1 and
# never reaped by node. tini forwards SIGTERM to node (which stops reconciling, releases its Lease
# and exits) and reaps every zombie. Without -g: node itself ends the renders it started, so a
# git fetch is not killed half-way while leaving lock files in the cache.
ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/dist/cli/main.js"]
# In a Pod, `impersync run` finds the in-cluster service account and API server on its own.
CMD ["run"]
