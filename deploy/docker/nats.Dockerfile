# nats-server built from the Go module github.com/nats-io/nats-server/v2 (the
# version in jetjob's go.mod), static, on an empty image: the e2e suite's
# NATS, needing no registry. deploy/e2e-images.sh builds the binary with
# `CGO_ENABLED=0 go build -o CONTEXT/nats-server github.com/nats-io/nats-server/v2`
# from inside the module and tags the image like the official one
# (nats:2.15; built here as jetjob-e2e/nats:2.15), whose entrypoint is the server binary too.
FROM scratch
COPY nats-server /nats-server
# Client, cluster routes, monitoring (/healthz).
EXPOSE 4222 6222 8222
ENTRYPOINT ["/nats-server"]
CMD ["--jetstream", "--store_dir", "/data", "--http_port", "8222"]
