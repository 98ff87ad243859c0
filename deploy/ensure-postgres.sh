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
# (root with apt-get), and otherwise says exactly what to install and fails
# (deploy/ensure-lib.sh). It prints nothing and changes nothing when the
# binaries are already there.
set -euo pipefail
# shellcheck source=deploy/ensure-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/ensure-lib.sh"

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

name=ensure-postgres what="PostgreSQL server binaries (initdb, pg_ctl)" override=JETJOB_PG_BIN
packages=postgresql needed_by="the integration tests and jetjob-scheduler dev" apt_opts=""
ensure
