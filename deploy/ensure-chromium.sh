#!/usr/bin/env bash
# ensure-chromium.sh: make sure a Chromium browser is installed. The web
# console's browser tests (scheduler/internal/console/browser_test.go) drive a real
# headless Chromium through chromedp; a fresh machine has none. It looks
# where those tests look: $JETJOB_CHROMIUM, then chromium and
# chromium-browser on PATH. When none is found it installs Debian's
# `chromium` package if it can (root with apt-get), and otherwise says what
# to install and fails (deploy/ensure-lib.sh). It prints nothing when a
# browser is there. It also wants a font with Chinese glyphs
# (fonts-wqy-microhei, 4 MB): the console speaks Chinese, and its layout
# tests and screenshots must draw real glyphs, not empty boxes.
set -euo pipefail
# shellcheck source=deploy/ensure-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/ensure-lib.sh"

found() {
	if [[ -n "${JETJOB_CHROMIUM:-}" ]]; then
		[[ -x "$JETJOB_CHROMIUM" ]]
		return
	fi
	command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || return 1
	# A Chinese font, where fontconfig can say (no fc-list: not checked).
	! command -v fc-list >/dev/null 2>&1 || [[ -n "$(fc-list :lang=zh family)" ]]
}

name=ensure-chromium what="Chromium browser (chromium, chromium-browser)" override=JETJOB_CHROMIUM
packages="chromium fonts-wqy-microhei" needed_by="the console's browser tests" apt_opts=""
ensure
