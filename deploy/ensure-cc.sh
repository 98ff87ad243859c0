#!/usr/bin/env bash
# ensure-cc.sh: make sure a C compiler is installed. `make test` runs the
# tests with the race detector (go test -race), which needs cgo and so a C
# compiler; a fresh machine may have Go but none. When it is missing this
# installs Debian's gcc if it can (root with apt-get), and otherwise says
# what to install and fails. It prints nothing when a compiler is there.
set -euo pipefail

cc=$(go env CC 2>/dev/null || true)
if command -v "${cc:-gcc}" >/dev/null 2>&1; then
	exit 0
fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-cc: no C compiler (${cc:-gcc}) found; go test -race needs one: install gcc (apt-get install -y gcc) or set CC" >&2
	exit 1
fi
echo "ensure-cc: installing a C compiler for the race detector (apt-get install gcc)" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev >/dev/null
command -v "${cc:-gcc}" >/dev/null 2>&1 || {
	echo "ensure-cc: installed gcc but still found no ${cc:-gcc}" >&2
	exit 1
}
