#!/usr/bin/env bash
# ensure-chromium.sh: make sure a Chromium browser is installed. The web
# console's browser tests (scheduler/internal/console/browser_test.go) drive a real
# headless Chromium through chromedp; a fresh machine has none. It looks
# where those tests look: $JETJOB_CHROMIUM, then chromium and
# chromium-browser on PATH. When none is found it installs Debian's
# `chromium` package if it can (root with apt-get), and otherwise says what
# to install and fails. It prints nothing when a browser is there.
set -euo pipefail

found() {
	if [[ -n "${JETJOB_CHROMIUM:-}" ]]; then
		[[ -x "$JETJOB_CHROMIUM" ]]
		return
	fi
	command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1
}

if found; then
	exit 0
fi
if [[ -n "${JETJOB_CHROMIUM:-}" ]]; then
	echo "ensure-chromium: JETJOB_CHROMIUM=$JETJOB_CHROMIUM is not an executable" >&2
	exit 1
fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-chromium: no chromium found; the console's browser tests need one: install Debian's chromium (apt-get install -y chromium) or set JETJOB_CHROMIUM" >&2
	exit 1
fi
echo "ensure-chromium: installing chromium for the console's browser tests (apt-get install chromium)" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
found || {
	echo "ensure-chromium: installed chromium but still found none on PATH" >&2
	exit 1
}
