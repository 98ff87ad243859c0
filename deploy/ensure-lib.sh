# ensure-lib.sh: what the deploy/ensure-*.sh scripts share, sourced by
# them. A script defines found (is what it ensures there?), sets the
# variables below and calls ensure:
#
#   name      its name in messages (ensure-postgres)
#   what      what it ensures, as messages name it
#   override  the variable that points at it instead of the search ("" for
#             none): when that is set, installing a package would not help
#   packages  the Debian packages that hold it
#   needed_by what needs it ("the console's browser tests")
#   apt_opts  extra options of apt-get install (may be empty)
#
# ensure prints nothing and changes nothing when found holds. Otherwise it
# installs the packages if it can (root with apt-get), waiting for another
# apt run (a concurrent ensure-*) rather than failing on its lock, with
# Debian's maintainer scripts kept from starting system services (the
# tests start their own servers); and else says what to install and fails.

ensure() {
	if found; then
		return 0
	fi
	if [[ -n "$override" && -n "${!override:-}" ]]; then
		echo "$name: $override=${!override} holds no $what: fix it, or unset it" >&2
		exit 1
	fi
	if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
		echo "$name: no $what found (for $needed_by): run \`apt-get install -y $packages\` (Debian/Ubuntu)${override:+ or set $override}" >&2
		exit 1
	fi
	echo "$name: installing $what for $needed_by (apt-get install $packages)" >&2
	apt-get -o DPkg::Lock::Timeout=600 update -qq
	local policy=/usr/sbin/policy-rc.d made_policy="" status=0
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		made_policy=1
	fi
	# shellcheck disable=SC2086 # apt_opts and packages are word lists
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq ${apt_opts:-} $packages >/dev/null || status=$?
	if [[ -n "$made_policy" ]]; then
		rm -f "$policy"
	fi
	if [[ $status -ne 0 ]]; then
		echo "$name: apt-get install $packages failed (exit $status)" >&2
		exit "$status"
	fi
	if ! found; then
		echo "$name: installed $packages but still found no $what" >&2
		exit 1
	fi
}
