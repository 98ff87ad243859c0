#!/bin/bash
# docker-entrypoint.sh of jetjob's offline PostgreSQL image (see
# deploy/e2e-images.sh, which builds it from Debian packages).
#
# It honours the environment of the official postgres image, so that the
# e2e suite and docker-compose.yml work with either image:
#   POSTGRES_USER      superuser to create (default postgres)
#   POSTGRES_PASSWORD  its password; required unless POSTGRES_HOST_AUTH_METHOD=trust
#   POSTGRES_DB        database to create (default: $POSTGRES_USER)
#   POSTGRES_HOST_AUTH_METHOD  auth for network clients (default scram-sha-256)
#   POSTGRES_INITDB_ARGS       extra initdb arguments
#   PGDATA             data directory (default /var/lib/postgresql/data)
# On the first start (no PG_VERSION in $PGDATA) it runs initdb and creates
# the database; every start then runs the server in the foreground,
# listening on all addresses. Arguments: "postgres [options]" or just
# options ("-c fsync=off"); anything else is executed as a command.
# Scripts in /docker-entrypoint-initdb.d are not supported.
#
# The image runs as the postgres user (USER postgres): there is no gosu,
# and the server refuses to run as root anyway. Stop it with SIGINT (the
# image's STOPSIGNAL): SIGTERM is a "smart" shutdown that waits for clients.
set -euo pipefail

PGDATA=${PGDATA:-/var/lib/postgresql/data}
export PGDATA

if [[ $# -eq 0 || "${1:0:1}" == "-" ]]; then
	set -- postgres "$@"
fi
if [[ "$1" != "postgres" ]]; then
	exec "$@"
fi
shift

log() { echo "docker-entrypoint: $*" >&2; }

if [[ ! -s "$PGDATA/PG_VERSION" ]]; then
	user=${POSTGRES_USER:-postgres}
	db=${POSTGRES_DB:-$user}
	method=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}
	if [[ -z "${POSTGRES_PASSWORD:-}" && "$method" != "trust" ]]; then
		log "POSTGRES_PASSWORD is not set: set it, or POSTGRES_HOST_AUTH_METHOD=trust to allow every network client in without a password"
		exit 1
	fi
	mkdir -p "$PGDATA"
	chmod 700 "$PGDATA"
	pwfile=$(mktemp)
	trap 'rm -f "$pwfile"' EXIT
	printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pwfile"
	pwargs=()
	if [[ -n "${POSTGRES_PASSWORD:-}" ]]; then
		pwargs=(--pwfile="$pwfile")
	fi
	log "initializing $PGDATA (superuser $user, database $db, network auth $method)"
	# shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a word list
	initdb -D "$PGDATA" -U "$user" -E UTF8 --locale=C.UTF-8 \
		--auth-local=trust --auth-host="$method" "${pwargs[@]}" ${POSTGRES_INITDB_ARGS:-} >/dev/null
	rm -f "$pwfile"
	trap - EXIT
	{
		echo
		echo "# added by docker-entrypoint.sh: clients on the container network"
		echo "host all all all $method"
	} >>"$PGDATA/pg_hba.conf"
	if [[ "$db" != "postgres" ]]; then
		# Single-user mode: no server, no socket, no port is opened yet.
		dbq=${db//\"/\"\"}
		echo "CREATE DATABASE \"$dbq\" OWNER \"${user//\"/\"\"}\"" |
			postgres --single -D "$PGDATA" postgres >/dev/null
	fi
	log "initialized"
fi

exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
