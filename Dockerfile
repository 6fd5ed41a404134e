# syntax=docker/dockerfile:1
# The sidecar as a container: a static binary (no cgo, no libc) on
# distroless's static base, as the nonroot user (65532), listening on every
# interface of the container (PK_LISTEN) since it is reached from other
# containers or through a published port. The image has no shell and no
# redis-cli: its healthcheck is the sidecar itself (`sidecar --check` sends
# PING to PK_LISTEN, with PK_REQUIREPASS). It runs on a read-only root
# filesystem; only the file: backend's /data needs to be writable.
#
# Protected mode: on 0.0.0.0 with no password the sidecar refuses to start
# (exit 2, one line saying how), as redis-server does. The image sets no
# password and does not turn the check off: run it with PK_REQUIREPASS or
# PK_REQUIREPASS_FILE (a mounted secret), or with PK_PROTECTED_MODE=no
# where only trusted peers reach the port (docker-compose.yml publishes on
# the host's loopback and says so).

#
# Multi-arch (docker buildx build --platform linux/amd64,linux/arm64): the
# build stage runs on the builder's own platform ($BUILDPLATFORM) and
# cross-compiles for each target (TARGETOS/TARGETARCH; no cgo, so no cross
# C toolchain), instead of compiling under emulation.
#
# The bases are pinned by digest (the tag beside it says what it is), so
# that a rebuild of the same commit uses the same bases; Dependabot
# (.github/dependabot.yml) proposes the new digests. The digests are those
# of golang:1.26-bookworm (Go 1.26.8) published 2026-09-08 and of
# distroless/static-debian12:nonroot published 2026-08-26.
#
# VERSION and COMMIT stamp the binary (internal/version); the release
# workflow passes `git describe --tags --always --dirty` and the commit
# (.git is not in the build context). Without them the binary says
# "devel".

FROM --platform=$BUILDPLATFORM golang:1.26-bookworm@sha256:9fdc884aacc3bec89b20ffc69f4bb369c78210e3e4f600387b5128b12c199f81 AS build
WORKDIR /src
# Dependencies first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG TARGETOS TARGETARCH VERSION COMMIT
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags="-s -w -X github.com/prepkey/prepkey/internal/version.version=$VERSION -X github.com/prepkey/prepkey/internal/version.commit=$COMMIT" -o /out/sidecar ./cmd/sidecar \
	&& mkdir /out/data

FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab
COPY --from=build /out/sidecar /usr/local/bin/sidecar
# The file: backend's directory, owned by the nonroot user so that a fresh
# named volume mounted there is writable.
COPY --from=build --chown=65532:65532 /out/data /data
ENV PK_LISTEN=0.0.0.0:6380 \
	PK_BACKEND=file:/data
VOLUME /data
EXPOSE 6380
USER 65532:65532
HEALTHCHECK --interval=5s --timeout=4s --start-period=2s --retries=3 \
	CMD ["/usr/local/bin/sidecar", "--check"]
ENTRYPOINT ["/usr/local/bin/sidecar"]
