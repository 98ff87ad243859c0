#!/usr/bin/env bash
# ensure-cc.sh: make sure a C compiler is installed. `make test` runs the
# tests with the race detector (go test -race), which needs cgo and so a C
# compiler; a fresh machine may have Go but none. When it is missing this
# installs Debian's gcc if it can (root with apt-get), and otherwise says
# what to install and fails (deploy/ensure-lib.sh). It prints nothing when
# a compiler is there.
set -euo pipefail
# shellcheck source=deploy/ensure-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/ensure-lib.sh"

cc=$(go env CC 2>/dev/null || true)
found() {
	command -v "${cc:-gcc}" >/dev/null 2>&1
}

name=ensure-cc what="C compiler (${cc:-gcc})" override=""
packages="gcc libc6-dev" needed_by="go test -race" apt_opts=""
ensure
