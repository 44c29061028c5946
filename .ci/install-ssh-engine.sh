#!/usr/bin/env bash
# Installs the OpenSSH server for the pool test's engine over ssh:// (tests/ssh_engine.py):
# the test starts its own sshd on 127.0.0.1 with its own config, host key and client key, for
# as long as the test runs. The package's own service is never started here (no daemon on
# port 22 is left behind). Idempotent: skips an sshd that is already installed.
set -euo pipefail

die() { echo "install-ssh-engine: ERROR: $*" >&2; exit 1; }
say() { echo "install-ssh-engine: $*"; }

SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || die "run as root or install sudo"
  SUDO="sudo"
fi

if [ -x /usr/sbin/sshd ] && command -v ssh >/dev/null && command -v ssh-keygen >/dev/null; then
  say "sshd already installed: $(/usr/sbin/sshd -V 2>&1 | head -n 1)"
  exit 0
fi
# invoke-rc.d asks policy-rc.d: 101 keeps the package's service from starting during the install.
policy=/usr/sbin/policy-rc.d
made_policy=""
if [ ! -e "$policy" ]; then
  $SUDO sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 0755 $policy"
  made_policy=1
fi
trap '[ -z "$made_policy" ] || $SUDO rm -f "$policy"' EXIT
say "installing openssh-server"
$SUDO apt-get update -qq || die "apt-get update failed (is a Debian mirror reachable?)"
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  openssh-server openssh-client >/dev/null || die "apt-get install openssh-server failed"
[ -x /usr/sbin/sshd ] || die "/usr/sbin/sshd is still missing after the install"
say "installed $(/usr/sbin/sshd -V 2>&1 | head -n 1)"
