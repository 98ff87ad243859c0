#!/usr/bin/env bash
# ensure-mariadb.sh: make sure the MariaDB server binaries (mariadbd,
# mariadb-install-db) that scheduler/internal/xxljob/localmaria needs are installed.
#
# `make test-unit` calls it first, because the test of `jetjob import xxl-job`
# reads a real MySQL-protocol server (a throwaway mariadbd, like the
# throwaway PostgreSQL of internal/localpg), and a fresh machine has none.
# It looks where localmaria.FindBinaries looks, in the same order:
#   $JETJOB_MARIADB_BIN, /usr/sbin and /usr/bin, then PATH.
# When they are missing it installs Debian's `mariadb-server` package if it
# can (root with apt-get), and otherwise says exactly what to install and
# fails (deploy/ensure-lib.sh). It prints nothing and changes nothing when
# they are already there. Installing the package does not need the system
# service: the tests start their own server on a temporary data directory.
set -euo pipefail
# shellcheck source=deploy/ensure-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/ensure-lib.sh"

found() {
	if [[ -n "${JETJOB_MARIADB_BIN:-}" ]]; then
		[[ -x "$JETJOB_MARIADB_BIN/mariadbd" && -x "$JETJOB_MARIADB_BIN/mariadb-install-db" ]]
		return
	fi
	local d server="" installer=""
	for d in /usr/sbin /usr/bin; do
		[[ -z "$server" && -x "$d/mariadbd" ]] && server=$d/mariadbd
		[[ -z "$installer" && -x "$d/mariadb-install-db" ]] && installer=$d/mariadb-install-db
	done
	[[ -n "$server" ]] || server=$(command -v mariadbd || true)
	[[ -n "$installer" ]] || installer=$(command -v mariadb-install-db || true)
	[[ -n "$server" && -n "$installer" ]]
}

name=ensure-mariadb what="MariaDB server binaries (mariadbd, mariadb-install-db)" override=JETJOB_MARIADB_BIN
packages=mariadb-server needed_by="the test of jetjob import xxl-job" apt_opts=--no-install-recommends
ensure
