# jetjob-worker: the drop-in worker (static binary) with a shell for its
# built-in `shell` handler, on a busybox userland.
#
# Why busybox: `shell` jobs run `sh -c PARAMS`, so the image needs sh and the
# usual small tools (sleep, date, echo, cat, wc, wget, ...). Debian's
# busybox-static package gives all of them in one 2 MB static binary, with
# no registry and no libc: the image stays about 25 MB. Jobs that need more
# (curl, python, a database client) want an image of their own: copy
# /usr/local/bin/jetjob-worker into it, the binary is static.
#
# deploy/e2e-images.sh (`make e2e-images`) prepares a build context holding
#   jetjob-worker         the static binary (CGO_ENABLED=0)
#   busybox               /bin/busybox from Debian's busybox-static package
#   ca-certificates.crt   the build machine's CA bundle
#   passwd, group         a root and a jetjob (65532) entry, for whoami, id, ~
# and runs `DOCKER_BUILDKIT=0 docker build -f worker.Dockerfile CONTEXT`.
FROM scratch
COPY busybox /bin/busybox
# One symlink per applet (sh, sleep, date, ...) in /bin.
RUN ["/bin/busybox", "--install", "-s", "/bin"]
RUN mkdir -p /tmp /home/jetjob /usr/local/bin && chmod 1777 /tmp && chown 65532:65532 /home/jetjob
COPY passwd group /etc/
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY jetjob-worker /usr/local/bin/jetjob-worker
USER 65532:65532
WORKDIR /home/jetjob
ENV HOME=/home/jetjob \
    PATH=/usr/local/bin:/bin \
    JETJOB_HANDLERS=shell
ENTRYPOINT ["/usr/local/bin/jetjob-worker"]
