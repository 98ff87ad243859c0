#!/usr/bin/env bash
# tools.sh: build, once per version, the command-line tools the deploy checks
# use (`make helm-check`, `make deploy-test`) from their Go modules through
# the Go module proxy (this machine reaches no GitHub release and no
# container registry), and print the binary's path. (promtool comes from
# Debian's package instead: deploy/ensure-promtool.sh.)
#
#   usage: deploy/tools.sh helm
#
# Each tool lands in bin/tools/<name>-<version> (JETJOB_TOOLS_DIR overrides
# the directory) and is reused as long as it exists: a warm call costs
# nothing. A cold build compiles a few hundred packages (helm ≈ k8s
# client-go); Go's build cache makes a rebuild after `make clean` quick as
# well.
#
# Built with `go install pkg@version` in module mode: the tool's own go.mod
# and go.sum decide its dependencies, so none of them enters the project's
# go.mod (users of the worker SDK import this module).
set -euo pipefail

HELM_VERSION=${HELM_VERSION:-v3.22.0}

cd "$(dirname "${BASH_SOURCE[0]}")/.."
GO=${GO:-go}
DIR=${JETJOB_TOOLS_DIR:-$PWD/bin/tools}

case ${1:-} in
helm) pkg=helm.sh/helm/v3/cmd/helm version=$HELM_VERSION ;;
*)
	echo "usage: $0 helm (promtool: deploy/ensure-promtool.sh)" >&2
	exit 2
	;;
esac
name=$1
out=$DIR/$name-$version

if [[ ! -x $out ]]; then
	mkdir -p "$DIR"
	tmp=$(mktemp -d "$DIR/.build-$name.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	echo "tools: building $name $version from $pkg (once; reused from $out)" >&2
	start=$SECONDS
	# GOFLAGS cleared: the project's (e.g. -mod=vendor) do not apply to
	# another module. CGO off: static binaries, no C compiler needed.
	GOFLAGS= GOBIN=$tmp CGO_ENABLED=0 "$GO" install "$pkg@$version"
	mv "$tmp/$name" "$out"
	echo "tools: built $name $version in $((SECONDS - start)) s" >&2
fi
echo "$out"
