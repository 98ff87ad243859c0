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
# fails. It waits for another apt run (a concurrent ensure-*) rather than
# failing on its lock. It prints nothing and changes nothing when they are already there.
# Installing the package does not need the system service: the tests start
# their own server on a temporary data directory.
set -euo pipefail

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

if found; then
	exit 0
fi

if [[ -n "${JETJOB_MARIADB_BIN:-}" ]]; then
	# Installing a package would not change what JETJOB_MARIADB_BIN points at.
	echo "ensure-mariadb: JETJOB_MARIADB_BIN=$JETJOB_MARIADB_BIN has no mariadbd and mariadb-install-db: point it at MariaDB's binaries, or unset it" >&2
	exit 1
fi

if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-mariadb: MariaDB server binaries not found (mariadbd, mariadb-install-db): install them with \`apt-get install -y mariadb-server\` (Debian/Ubuntu) or set JETJOB_MARIADB_BIN" >&2
	exit 1
fi

echo "ensure-mariadb: installing MariaDB server binaries (apt-get install mariadb-server)" >&2
apt-get -o DPkg::Lock::Timeout=600 update -qq
# policy-rc.d keeps Debian's maintainer scripts from starting the system
# service: the tests run their own throwaway servers and need none.
policy=/usr/sbin/policy-rc.d
made_policy=""
if [[ ! -e $policy ]]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	made_policy=1
fi
status=0
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends mariadb-server >/dev/null || status=$?
if [[ -n "$made_policy" ]]; then
	rm -f "$policy"
fi
if [[ $status -ne 0 ]]; then
	echo "ensure-mariadb: apt-get install mariadb-server failed (exit $status)" >&2
	exit "$status"
fi

if ! found; then
	echo "ensure-mariadb: installed the mariadb-server package but still found no mariadbd and mariadb-install-db" >&2
	exit 1
fi
