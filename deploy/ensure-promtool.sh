#!/usr/bin/env bash
# ensure-promtool.sh: make sure a promtool is at hand for `make rules-check`
# and `make deploy-test`, and print its path.
#
#   usage: deploy/ensure-promtool.sh
#
# It takes, in order: $JETJOB_PROMTOOL; a promtool on PATH of version
# $PROMTOOL_MIN or later; the one a previous run left in bin/tools
# (JETJOB_TOOLS_DIR overrides the directory); otherwise Debian's
# `prometheus` package (bookworm: 2.42), fetched through apt.
#
# Only promtool is wanted, so the package is not installed: `apt-get
# download` fetches it (19 MB) and promtool alone is unpacked into
# bin/tools/promtool-<package version>. Installing it would add the
# Prometheus server, a dozen JavaScript packages and a system service,
# none of which the checks use. promtool 2.42 checks and unit-tests the
# rules (promtool check rules, promtool test rules) and parses the
# dashboard's queries; building a current one from the Prometheus module
# instead compiled every cloud SDK (minutes on a cold Go cache).
#
# No root is needed when apt's package lists are present; as root it runs
# apt-get update when they are not. Elsewhere (no apt) it says what to
# install and fails.
set -euo pipefail

PROMTOOL_MIN=${PROMTOOL_MIN:-2.42.0}

cd "$(dirname "${BASH_SOURCE[0]}")/.."
DIR=${JETJOB_TOOLS_DIR:-$PWD/bin/tools}

if [[ -n "${JETJOB_PROMTOOL:-}" ]]; then
	if [[ ! -x $JETJOB_PROMTOOL ]]; then
		echo "ensure-promtool: JETJOB_PROMTOOL=$JETJOB_PROMTOOL is not an executable" >&2
		exit 1
	fi
	echo "$JETJOB_PROMTOOL"
	exit 0
fi

# version prints the version promtool $1 reports (2.42.0 of
# "promtool, version 2.42.0+ds (branch: ...)").
version() {
	"$1" --version 2>&1 | sed -n '1s/^promtool, version \([0-9][0-9.]*\).*/\1/p'
}

# recent reports whether version $1 is PROMTOOL_MIN or later.
recent() {
	[[ -n $1 && $(printf '%s\n%s\n' "$PROMTOOL_MIN" "$1" | sort -V | head -n1) == "$PROMTOOL_MIN" ]]
}

if p=$(command -v promtool 2>/dev/null) && recent "$(version "$p")"; then
	echo "$p"
	exit 0
fi
for p in "$DIR"/promtool-debian-*; do
	if [[ -x $p ]]; then
		echo "$p"
		exit 0
	fi
done

if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
	echo "ensure-promtool: no promtool $PROMTOOL_MIN or later found: install Prometheus's promtool (Debian/Ubuntu: apt-get install prometheus) or set JETJOB_PROMTOOL" >&2
	exit 1
fi

mkdir -p "$DIR"
tmp=$(mktemp -d "$DIR/.promtool.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# As root apt drops to its _apt user to download, which cannot write
# into tmp: keep root instead (the file is only unpacked, not installed).
sandbox=()
if [[ $(id -u) -eq 0 ]]; then
	sandbox=(-o APT::Sandbox::User=root)
fi
download() { (cd "$tmp" && apt-get -qq "${sandbox[@]}" download prometheus >/dev/null 2>&1); }

echo "ensure-promtool: fetching promtool from Debian's prometheus package (apt-get download; once, kept in $DIR)" >&2
if ! download; then
	if [[ $(id -u) -ne 0 ]]; then
		echo "ensure-promtool: apt-get download prometheus failed (package lists missing? run apt-get update as root), or install promtool and set JETJOB_PROMTOOL" >&2
		exit 1
	fi
	apt-get -o DPkg::Lock::Timeout=600 update -qq
	if ! download; then
		echo "ensure-promtool: apt-get download prometheus failed after apt-get update: install promtool and set JETJOB_PROMTOOL" >&2
		exit 1
	fi
fi
deb=$(echo "$tmp"/prometheus_*.deb)
ver=$(dpkg-deb -f "$deb" Version)
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" ./usr/bin/promtool
out=$DIR/promtool-debian-$ver
mv "$tmp/usr/bin/promtool" "$out"
if ! recent "$(version "$out")"; then
	echo "ensure-promtool: $out reports version '$(version "$out")', older than $PROMTOOL_MIN" >&2
	rm -f "$out"
	exit 1
fi
echo "ensure-promtool: $(version "$out") in $out" >&2
echo "$out"
