# The shardgate image: a static binary on an empty base, run as a
# non-root user, with no shell. docs/operations.md ("Container image and
# Kubernetes") says how to build and run it:
#
#   docker build --build-arg VERSION="$(git describe --tags --always --dirty)" -t shardgate .
#   docker run --rm -p 6033:6033 -v "$PWD/conf:/etc/shardgate:ro" shardgate
#
# The suite (deploy/image_test.go) builds this image where an engine
# runs, and elsewhere runs the build stage's RUN steps as a script in a
# copy of the context standing for WORKDIR; so the build stage writes
# only below its WORKDIR, and the final stage copies from there.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
# The modules first: their layer is kept while only the sources change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The version `shardgate version` reports (main.version, as bench/ stamps
# it); the context has no .git, so Go records no commit of its own.
ARG VERSION=v0.0.0-dev
# CGO_ENABLED=0: a static binary (Go's own DNS resolver), which runs on an
# empty base. image/ is the final image's tree: the binary and an empty
# /tmp, which a merge spills into (schemas[].merge_overflow: spill).
RUN mkdir -p -m 1777 image/tmp && \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
        -o image/shardgate ./cmd/shardgate

FROM scratch
# CA certificates for TLS to backends (clusters[].tls.mode: verify without
# a ca_file) and to a tracing collector over https.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /src/image/ /
# 65532, the usual "nonroot" id; numeric so that Kubernetes' runAsNonRoot
# can check it without an /etc/passwd.
USER 65532:65532
# 6033 the MySQL listener, 6080 the admin HTTP port (/healthz, /readyz,
# /metrics), as deploy/kubernetes/base/configmap.yaml configures them.
EXPOSE 6033 6080
ENTRYPOINT ["/shardgate"]
CMD ["serve", "--config", "/etc/shardgate/shardgate.yaml"]
