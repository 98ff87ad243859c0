# jetjob-scheduler: the static binary (CGO_ENABLED=0) on an empty image.
#
# Needs no registry: deploy/e2e-images.sh (`make e2e-images`) prepares a
# build context holding
#   jetjob-scheduler, jetjob    static binaries (the scheduler and the CLI)
#   ca-certificates.crt         the build machine's CA bundle, for TLS to
#                               PostgreSQL and NATS
# and runs `DOCKER_BUILDKIT=0 docker build -f scheduler.Dockerfile CONTEXT`.
# Time zones need no /usr/share/zoneinfo: the zone database is embedded in
# the binary (time/tzdata).
FROM scratch
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY jetjob-scheduler jetjob /usr/local/bin/
# An unprivileged numeric user: a scratch image has no /etc/passwd.
USER 65532:65532
ENV JETJOB_LISTEN=:8080
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/jetjob-scheduler"]
CMD ["serve"]
