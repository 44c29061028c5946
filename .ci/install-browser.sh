#!/usr/bin/env bash
# Installs Debian's Chromium for the HTML report test (headless, no network of its own).
set -euo pipefail

die() { echo "install-browser: ERROR: $*" >&2; exit 1; }

if ! command -v chromium >/dev/null; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq || die "apt-get update failed (is a Debian mirror reachable?)"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium \
    || die "apt-get install chromium failed"
fi
chromium --version || die "chromium is installed but does not start"
