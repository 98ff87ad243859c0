#!/usr/bin/env bash
# ensure-postgres.sh: make sure the PostgreSQL server binaries (initdb,
# pg_ctl, postgres) that internal/localpg needs are installed.
#
# `make run` and `make test` call it first, because every integration test
# and `jetjob-scheduler dev` start a throwaway PostgreSQL from those binaries,
# and a fresh machine (a new CI machine, a new developer box) has none.
# It looks where localpg.FindBinaries looks, in the same order:
#   $JETJOB_PG_BIN, /usr/lib/postgresql/*/bin, the directory of pg_ctl on PATH.
# When they are missing it installs Debian's `postgresql` package if it can
# (root with apt-get), and otherwise says exactly what to install and fails.
# It prints nothing and changes nothing when the binaries are already there.
set -euo pipefail

has_bins() {
	[[ -x "$1/initdb" && -x "$1/pg_ctl" ]]
}

found() {
	local dir pg_ctl
	if [[ -n "${JETJOB_PG_BIN:-}" ]]; then
		has_bins "$JETJOB_PG_BIN"
		return
	fi
	for dir in /usr/lib/postgresql/*/bin; do
		if has_bins "$dir"; then
			return 0
		fi
	done
	if pg_ctl=$(command -v pg_ctl); then
		has_bins "$(dirname "$pg_ctl")" && return 0
	fi
	return 1
}

if found; then
	exit 0
fi

if [[ -n "${JETJOB_PG_BIN:-}" ]]; then
	# Installing a package would not change what JETJOB_PG_BIN points at.
	echo "ensure-postgres: JETJOB_PG_BIN=$JETJOB_PG_BIN has no initdb and pg_ctl: point it at PostgreSQL's server bin directory, or unset it" >&2
	exit 1
fi

if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-postgres: PostgreSQL server binaries not found (initdb, pg_ctl): install them with \`apt-get install -y postgresql\` (Debian/Ubuntu) or set JETJOB_PG_BIN" >&2
	exit 1
fi

echo "ensure-postgres: installing PostgreSQL server binaries (apt-get install postgresql)" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null

if ! found; then
	echo "ensure-postgres: installed the postgresql package but still found no initdb and pg_ctl under /usr/lib/postgresql/*/bin" >&2
	exit 1
fi
