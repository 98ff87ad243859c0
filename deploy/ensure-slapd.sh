#!/usr/bin/env bash
# ensure-slapd.sh: make sure OpenLDAP's server (slapd) and its tools
# (slapadd), which scheduler/internal/ldaptest needs, are installed.
#
# `make test-unit` calls it first, because the LDAP sign-in tests bind to a
# real directory (a throwaway slapd on 127.0.0.1 with its own configuration
# and a few users and groups, started by the tests as the current user), and
# a fresh machine has none. It looks where ldaptest.FindBinaries looks, in
# the same order: $JETJOB_SLAPD_BIN, /usr/sbin and /usr/bin, then PATH.
# When they are missing it installs Debian's `slapd` and `ldap-utils`
# packages if it can (root with apt-get, without questions: the package's
# own directory and service are not used), and otherwise says exactly what
# to install and fails (deploy/ensure-lib.sh). It prints nothing and changes
# nothing when they are already there.
set -euo pipefail
# shellcheck source=deploy/ensure-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/ensure-lib.sh"

found() {
	if [[ -n "${JETJOB_SLAPD_BIN:-}" ]]; then
		[[ -x "$JETJOB_SLAPD_BIN/slapd" && -x "$JETJOB_SLAPD_BIN/slapadd" ]]
		return
	fi
	local d server="" adder=""
	for d in /usr/sbin /usr/bin; do
		[[ -z "$server" && -x "$d/slapd" ]] && server=$d/slapd
		[[ -z "$adder" && -x "$d/slapadd" ]] && adder=$d/slapadd
	done
	[[ -n "$server" ]] || server=$(command -v slapd || true)
	[[ -n "$adder" ]] || adder=$(command -v slapadd || true)
	[[ -n "$server" && -n "$adder" ]]
}

name=ensure-slapd what="OpenLDAP server binaries (slapd, slapadd)" override=JETJOB_SLAPD_BIN
packages="slapd ldap-utils" needed_by="the LDAP sign-in tests" apt_opts=--no-install-recommends
ensure
