# syntax=docker/dockerfile:1
# The sidecar as a container: a static binary (no cgo, no libc) on
# distroless's static base, as the nonroot user (65532), listening on every
# interface of the container (PK_LISTEN) since it is reached from other
# containers or through a published port. The image has no shell and no
# redis-cli: its healthcheck is the sidecar itself (`sidecar --check` sends
# PING to PK_LISTEN, with PK_REQUIREPASS). It runs on a read-only root
# filesystem; only the file: backend's /data needs to be writable.

FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/sidecar ./cmd/sidecar \
	&& mkdir /out/data

FROM gcr.io/distroless/static-debian12:nonroot
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
