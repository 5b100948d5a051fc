# syntax=docker/dockerfile:1
# floe: the host and every built-in plugin, one image.
# The Kafka client links librdkafka through cgo, so the build stage needs a C
# toolchain and the runtime stage needs glibc (debian, not distroless/static).

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 make build

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates=20230311+deb12u1 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/floe --create-home floe \
 && mkdir -p /etc/floe/connectors \
 && chown floe /etc/floe/connectors
COPY --from=build /src/bin/floe /usr/local/bin/floe
COPY --from=build /src/bin/plugins/ /usr/lib/floe/plugins/
COPY configs/docker-worker.json /etc/floe/worker.json
COPY configs/docker-distributed-worker.json /etc/floe/distributed-worker.json
# The data dir holds the embedded SQLite catalog, the local warehouse and
# the worker's state; mount a volume to keep them.
VOLUME ["/var/lib/floe"]
USER 10001
EXPOSE 8083
ENTRYPOINT ["/usr/local/bin/floe"]
# A cluster worker instead: docker run … floe distributed /etc/floe/distributed-worker.json
# (set bootstrap.servers and group.id there; see docs/distributed.md).
CMD ["standalone", "/etc/floe/worker.json"]
