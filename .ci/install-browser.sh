#!/usr/bin/env bash
# Installs Debian's Chromium and its chromedriver for the browser tests (the HTML report and
# the viewer: headless, driven by Selenium through chromedriver, no browser download of its own).
set -euo pipefail

die() { echo "install-browser: ERROR: $*" >&2; exit 1; }

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq || die "apt-get update failed (is a Debian mirror reachable?)"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" || die "apt-get install ${missing[*]} failed"
fi
chromium --version || die "chromium is installed but does not start"
chromedriver --version || die "chromedriver is installed but does not run (package chromium-driver)"
