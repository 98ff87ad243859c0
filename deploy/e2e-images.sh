#!/usr/bin/env bash
# e2e-images.sh: build, without any container registry, the four images the
# end-to-end suite (e2e/) and deploy/docker-compose.yml run. `make e2e-images`
# calls it; `make e2e` depends on that.
#
#   usage: deploy/e2e-images.sh [postgres] [nats] [scheduler] [worker]   (default: all four)
#
# Image names (the suite reads the same variables, with the same defaults).
# They live under jetjob-e2e/, never under an official image's name, which
# would hide the real image on a developer's machine:
#   JETJOB_E2E_POSTGRES_IMAGE   jetjob-e2e/postgres:15    skipped when present
#   JETJOB_E2E_NATS_IMAGE       jetjob-e2e/nats:2.15      rebuilt when go.mod's nats-server version changes
#   JETJOB_E2E_SCHEDULER_IMAGE  jetjob-e2e/scheduler:dev  rebuilt when its content changes
#   JETJOB_E2E_WORKER_IMAGE     jetjob-e2e/worker:dev     rebuilt when its content changes
# Images an older version of this script built under the former names
# (postgres:15, nats:2.15, jetjob-scheduler:e2e, jetjob-worker:e2e) are
# renamed, not rebuilt.
#
# How each is made (nothing is pulled; the Docker CLI has no buildx here, so
# builds use the classic builder, DOCKER_BUILDKIT=0):
#   postgres   Debian bookworm's postgresql-15, installed by debootstrap
#              (--variant=minbase) into a directory from the Debian mirror the
#              machine's apt uses, trimmed (apt caches, docs, man pages,
#              translations), given docker/postgres/docker-entrypoint.sh (the
#              official image's POSTGRES_* environment), `docker import`ed and
#              finished by docker/postgres/Dockerfile (STOPSIGNAL, which the
#              import cannot set). About 1.5-3 minutes the first time.
#   nats       nats-server built from the Go module in go.mod
#              (CGO_ENABLED=0 go build github.com/nats-io/nats-server/v2) on an
#              empty image (docker/nats.Dockerfile). About 1-2 minutes.
#   scheduler  static builds (CGO_ENABLED=0) of jetjob-scheduler and the jetjob CLI with
#              the machine's CA bundle on an empty image (docker/scheduler.Dockerfile).
#   worker     a static jetjob-worker on a busybox userland taken from Debian's
#              busybox-static package (docker/worker.Dockerfile).
# The jetjob images are labelled with a hash of everything that goes into
# them (binaries, Dockerfile, files): they are rebuilt exactly when that
# changes, and the image they replace is removed. Go builds are cached by Go,
# so an unchanged tree costs a few seconds.
#
# Needs: Docker, Go, and for the postgres image root with apt-get (debootstrap
# is installed when missing). JETJOB_E2E_DEBIAN_MIRROR overrides the mirror.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
DOCKERDIR=$ROOT/deploy/docker
GO=${GO:-go}
export DOCKER_BUILDKIT=0

PG_IMAGE=${JETJOB_E2E_POSTGRES_IMAGE:-jetjob-e2e/postgres:15}
NATS_IMAGE=${JETJOB_E2E_NATS_IMAGE:-jetjob-e2e/nats:2.15}
SCHED_IMAGE=${JETJOB_E2E_SCHEDULER_IMAGE:-jetjob-e2e/scheduler:dev}
WORKER_IMAGE=${JETJOB_E2E_WORKER_IMAGE:-jetjob-e2e/worker:dev}
SUITE=bookworm
PG_MAJOR=15

# Labels on every image this script builds: what built it, and for the
# jetjob images the content hash that decides a rebuild.
BUILT_BY=org.jetjob.e2e.built-by=deploy/e2e-images.sh
HASH_LABEL=org.jetjob.e2e.content-hash
NATS_VERSION_LABEL=org.jetjob.e2e.nats-server-version

log() { printf 'e2e-images: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# adopt IMAGE OLDNAME: rename an image this script built under a former
# name (an official image's) to IMAGE, once.
adopt() {
	local image=$1 old=$2
	if ! have_image "$image" && [[ $(docker image inspect -f '{{index .Config.Labels "org.jetjob.e2e.built-by"}}' "$old" 2>/dev/null) == deploy/e2e-images.sh ]]; then
		log "renaming $old (built by this script) to $image"
		docker tag "$old" "$image" && docker rmi "$old" >/dev/null
	fi
}

# dbuild ARGS...: `docker build -q` with the classic builder, quiet unless it
# fails (the classic builder warns about its deprecation on every build).
dbuild() {
	local out
	if ! out=$(docker build -q "$@" 2>&1); then
		printf '%s\n' "$out" >&2
		die "docker build $* failed"
	fi
}

work=$(mktemp -d "${TMPDIR:-/tmp}/jetjob-e2e-images.XXXXXX")
cleanup() {
	local status=$? m
	set +e
	# debootstrap mounts /proc and /sys inside its target while it runs; if
	# it died there, unmount before removing anything.
	for m in $(findmnt -rn -o TARGET 2>/dev/null | grep -F "$work/" | sort -r); do
		umount -l "$m"
	done
	rm -rf --one-file-system "$work"
	exit "$status"
}
trap cleanup EXIT

# What --version, /healthz and the worker registry report (internal/version),
# as the Makefile's build stamps it, but with the commit's date instead of
# the build's: the same tree gives the same bytes, so images are rebuilt
# only when their content changes.
VERSION_PKG=github.com/jetjob/jetjob/internal/version
STAMP="-X '$VERSION_PKG.version=$(git describe --tags --always --dirty 2>/dev/null || echo '(devel)')'"
STAMP+=" -X '$VERSION_PKG.commit=$(git rev-parse HEAD 2>/dev/null)'"
STAMP+=" -X '$VERSION_PKG.date=$(git log -1 --format=%cI 2>/dev/null)'"

# gobuild OUT PKG: a static, reproducible build (same tree, same bytes).
gobuild() {
	CGO_ENABLED=0 "$GO" build -trimpath -ldflags="-s -w $STAMP" -o "$1" "$2"
}

ca_bundle() {
	local f
	for f in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt /etc/ssl/cert.pem; do
		if [[ -s $f ]]; then
			cp "$f" "$1/ca-certificates.crt"
			return
		fi
	done
	# No bundle on this machine: ship an empty one (TLS to public CAs then
	# needs a bundle mounted at /etc/ssl/certs/ca-certificates.crt).
	log "no CA bundle found on this machine: the image gets an empty one"
	: >"$1/ca-certificates.crt"
}

# content_hash CTX DOCKERFILE: hash of the build context and the Dockerfile.
content_hash() {
	{
		(cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
		sha256sum <"$2"
	} | sha256sum | cut -c1-20
}

# build_hashed IMAGE DOCKERFILE CTX: docker build unless the image already
# carries this content's hash; then remove the image it replaced, if it was
# one of ours and nothing else uses it.
build_hashed() {
	local image=$1 dockerfile=$2 ctx=$3 hash old oldid newid
	hash=$(content_hash "$ctx" "$dockerfile")
	old=$(docker image inspect -f "{{index .Config.Labels \"$HASH_LABEL\"}}" "$image" 2>/dev/null || true)
	if [[ $old == "$hash" ]]; then
		log "$image is up to date ($hash)"
		return
	fi
	oldid=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)
	log "building $image ($hash)"
	dbuild -f "$dockerfile" --label "$BUILT_BY" --label "$HASH_LABEL=$hash" -t "$image" "$ctx"
	newid=$(docker image inspect -f '{{.Id}}' "$image")
	if [[ -n $oldid && $oldid != "$newid" ]] &&
		[[ $(docker image inspect -f '{{len .RepoTags}} {{index .Config.Labels "org.jetjob.e2e.built-by"}}' "$oldid" 2>/dev/null) == "0 deploy/e2e-images.sh" ]]; then
		docker rmi "$oldid" >/dev/null 2>&1 || log "previous $image ($oldid) is still in use: left in place"
	fi
}

build_scheduler() {
	local ctx=$work/scheduler
	mkdir -p "$ctx"
	gobuild "$ctx/jetjob-scheduler" ./scheduler/cmd/jetjob-scheduler
	gobuild "$ctx/jetjob" ./scheduler/cmd/jetjob
	ca_bundle "$ctx"
	build_hashed "$SCHED_IMAGE" "$DOCKERDIR/scheduler.Dockerfile" "$ctx"
}

# fetch_deb PACKAGE DIR: download one package from Debian (no install) and
# unpack it into DIR.
fetch_deb() {
	local pkg=$1 dir=$2 dl=$work/deb-$1
	mkdir -p "$dl" "$dir"
	if ! (cd "$dl" && apt-get download "$pkg" >/dev/null 2>&1); then
		log "apt-get download $pkg failed: updating the package lists once"
		apt-get -o DPkg::Lock::Timeout=600 update -qq
		(cd "$dl" && apt-get download "$pkg" >/dev/null)
	fi
	dpkg-deb -x "$dl"/"$pkg"_*.deb "$dir"
}

build_worker() {
	local ctx=$work/worker
	if ! compgen -G "$ROOT/worker/cmd/jetjob-worker/*.go" >/dev/null; then
		die "worker/cmd/jetjob-worker has no Go files yet: cannot build $WORKER_IMAGE"
	fi
	mkdir -p "$ctx"
	gobuild "$ctx/jetjob-worker" ./worker/cmd/jetjob-worker
	ca_bundle "$ctx"
	# busybox is only fetched when the cached copy is missing: Debian's
	# package changes rarely, and the content hash covers it anyway.
	local cache=${XDG_CACHE_HOME:-$HOME/.cache}/jetjob-e2e
	if [[ ! -x $cache/busybox ]]; then
		fetch_deb busybox-static "$work/busybox-static"
		mkdir -p "$cache"
		install -m 0755 "$work/busybox-static/bin/busybox" "$cache/busybox"
	fi
	cp "$cache/busybox" "$ctx/busybox"
	printf 'root:x:0:0:root:/root:/bin/sh\njetjob:x:65532:65532:jetjob:/home/jetjob:/bin/sh\n' >"$ctx/passwd"
	printf 'root:x:0:\njetjob:x:65532:\n' >"$ctx/group"
	build_hashed "$WORKER_IMAGE" "$DOCKERDIR/worker.Dockerfile" "$ctx"
}

build_nats() {
	local version have
	version=$("$GO" list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2)
	have=$(docker image inspect -f "{{index .Config.Labels \"$NATS_VERSION_LABEL\"}}" "$NATS_IMAGE" 2>/dev/null || true)
	if [[ $have == "$version" ]]; then
		log "$NATS_IMAGE has nats-server $version: skipped"
		return
	fi
	local ctx=$work/nats
	mkdir -p "$ctx"
	log "building nats-server $version from the Go module (1-2 minutes)"
	gobuild "$ctx/nats-server" github.com/nats-io/nats-server/v2
	log "building $NATS_IMAGE ($("$ctx/nats-server" --version))"
	dbuild -f "$DOCKERDIR/nats.Dockerfile" --label "$BUILT_BY" --label "$NATS_VERSION_LABEL=$version" -t "$NATS_IMAGE" "$ctx"
}

# debian_mirror prints the URI apt uses for the main bookworm suite.
debian_mirror() {
	if [[ -n ${JETJOB_E2E_DEBIAN_MIRROR:-} ]]; then
		echo "$JETJOB_E2E_DEBIAN_MIRROR"
		return
	fi
	local uri=""
	if [[ -r /etc/apt/sources.list.d/debian.sources ]]; then
		# deb822: paragraphs of "Field: value"; the one whose Suites name
		# the plain suite (not -security, -updates).
		uri=$(awk -v suite="$SUITE" 'BEGIN { RS = ""; FS = "\n" }
			{
				uris = ""; ok = 0
				for (i = 1; i <= NF; i++) {
					if ($i ~ /^URIs:/) { split(substr($i, 6), u, " "); uris = u[1] }
					if ($i ~ /^Suites:/) { n = split(substr($i, 8), s, " "); for (j = 1; j <= n; j++) if (s[j] == suite) ok = 1 }
				}
				if (ok && uris != "") { print uris; exit }
			}' /etc/apt/sources.list.d/debian.sources)
	fi
	if [[ -z $uri && -r /etc/apt/sources.list ]]; then
		uri=$(awk -v suite="$SUITE" '$1 == "deb" && $3 == suite { print $2; exit }' /etc/apt/sources.list)
	fi
	echo "${uri:-http://deb.debian.org/debian}"
}

build_postgres() {
	if have_image "$PG_IMAGE"; then
		log "$PG_IMAGE exists: skipped"
		return
	fi
	[[ $(id -u) -eq 0 ]] || die "building $PG_IMAGE needs root (debootstrap, chroot): run as root or provide the image"
	if ! command -v debootstrap >/dev/null 2>&1; then
		log "installing debootstrap"
		apt-get -o DPkg::Lock::Timeout=600 update -qq
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq debootstrap >/dev/null
	fi
	local rootfs=$work/postgres-rootfs mirror
	mirror=$(debian_mirror)
	log "debootstrap $SUITE with postgresql-$PG_MAJOR from $mirror (2-3 minutes)"
	if ! debootstrap --variant=minbase --include="postgresql-$PG_MAJOR" "$SUITE" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1; then
		tail -n 30 "$work/debootstrap.log" >&2
		die "debootstrap failed (log above)"
	fi
	# The package created a cluster in /var/lib/postgresql/15/main: the
	# entrypoint makes its own in $PGDATA on first start instead.
	rm -rf "$rootfs/etc/postgresql/$PG_MAJOR/main" "$rootfs/var/lib/postgresql/$PG_MAJOR/main"
	mkdir -p "$rootfs/var/lib/postgresql/data" "$rootfs/run/postgresql"
	install -m 0755 "$DOCKERDIR/postgres/docker-entrypoint.sh" "$rootfs/usr/local/bin/docker-entrypoint.sh"
	# Inside the chroot: the postgres user's uid is the rootfs's, not this
	# machine's.
	chroot "$rootfs" chown -R postgres:postgres /var/lib/postgresql /run/postgresql
	chmod 0700 "$rootfs/var/lib/postgresql/data"
	chmod 2775 "$rootfs/run/postgresql"
	# Trim what a server container never reads.
	rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* \
		"$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/* \
		"$rootfs"/usr/share/postgresql/$PG_MAJOR/man "$rootfs"/var/log/*.log "$rootfs"/var/cache/debconf/*-old \
		"$rootfs"/tmp/* "$rootfs"/var/tmp/*
	local rootfs_image=jetjob-e2e-postgres-rootfs:$SUITE
	log "importing $PG_IMAGE ($(du -sh --one-file-system "$rootfs" | cut -f1))"
	tar --numeric-owner --one-file-system -C "$rootfs" -c . |
		docker import \
			-c "ENV PATH=/usr/lib/postgresql/$PG_MAJOR/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
			-c "ENV PGDATA=/var/lib/postgresql/data" \
			-c "ENV LANG=C.UTF-8" \
			-c "USER postgres" \
			-c "WORKDIR /var/lib/postgresql" \
			-c 'ENTRYPOINT ["docker-entrypoint.sh"]' \
			-c 'CMD ["postgres"]' \
			-c "EXPOSE 5432" \
			-m "PostgreSQL $PG_MAJOR from Debian $SUITE packages (deploy/e2e-images.sh)" \
			- "$rootfs_image" >/dev/null
	# The import cannot set STOPSIGNAL: one Dockerfile step on top adds it.
	dbuild -f "$DOCKERDIR/postgres/Dockerfile" --build-arg "ROOTFS=$rootfs_image" \
		--label "$BUILT_BY" -t "$PG_IMAGE" "$DOCKERDIR/postgres"
	# Only the name goes: the layers stay, under the final image.
	docker rmi "$rootfs_image" >/dev/null
}

targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
	targets=(postgres nats scheduler worker)
fi
command -v docker >/dev/null 2>&1 || die "docker is not installed"
docker info >/dev/null 2>&1 || die "the Docker engine does not answer (docker info failed)"
adopt "$PG_IMAGE" postgres:15
adopt "$SCHED_IMAGE" jetjob-scheduler:e2e
adopt "$WORKER_IMAGE" jetjob-worker:e2e
if [[ -z $(docker image inspect -f "{{index .Config.Labels \"$NATS_VERSION_LABEL\"}}" nats:2.15 2>/dev/null) ]]; then
	# A former NATS image has no version label: renaming it would only
	# have it rebuilt; remove it if it is ours.
	if [[ $(docker image inspect -f '{{index .Config.Labels "org.jetjob.e2e.built-by"}}' nats:2.15 2>/dev/null) == deploy/e2e-images.sh ]]; then
		docker rmi nats:2.15 >/dev/null 2>&1 || true
	fi
fi
for t in "${targets[@]}"; do
	start=$SECONDS
	case $t in
	postgres) build_postgres ;;
	nats) build_nats ;;
	scheduler) build_scheduler ;;
	worker) build_worker ;;
	*) die "unknown image $t: want postgres, nats, scheduler or worker" ;;
	esac
	log "$t: $((SECONDS - start))s"
done
