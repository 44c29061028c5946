#!/usr/bin/env bash
# Install the pinned agent CLIs from npm into a reusable cache directory.
#
# Each CLI lands in $AGENTBENCH_CLI_CACHE/<name>-<version> (default
# /var/cache/agentbench/clis). A complete earlier install is reused. Prints one line
# "<name> <path-to-binary>" per CLI; exits non-zero if any install fails.
# The pins live in pytest_agentbench/testing/clis.py, shared with the test lookup.
#
# Usage: .ci/install-agent-clis.sh [codex|claude|opencode ...]   (default: all pinned CLIs)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${AGENTBENCH_CLI_CACHE:-/var/cache/agentbench/clis}"
PYTHON="${PYTHON:-python3}"

mapfile -t PINS < <("$PYTHON" "$here/../pytest_agentbench/testing/clis.py" pins)
[ ${#PINS[@]} -gt 0 ] || { echo "install-agent-clis: could not read the pins" >&2; exit 2; }

wanted=("$@")
if [ ${#wanted[@]} -eq 0 ]; then
  for pin in "${PINS[@]}"; do wanted+=("${pin%% *}"); done
fi

command -v npm >/dev/null || { echo "install-agent-clis: npm not found on PATH" >&2; exit 2; }
mkdir -p "$CACHE"

status=0
for want in "${wanted[@]}"; do
  found=0
  for pin in "${PINS[@]}"; do
    read -r name pkg version bin <<<"$pin"
    [ "$name" = "$want" ] || continue
    found=1
    dir="$CACHE/$name-$version"
    exe="$dir/node_modules/.bin/$bin"
    if [ ! -f "$dir/.complete" ] || [ ! -x "$exe" ]; then
      # Install into a scratch dir first so a failed or interrupted install is never reused.
      # Never --omit=optional: the native binary comes in an optional platform package.
      tmp="$(mktemp -d "$CACHE/.$name-$version.XXXXXX")"
      chmod 755 "$tmp"
      if npm install --no-audit --no-fund --loglevel=error --prefix "$tmp" "$pkg@$version" >&2 \
         && [ -x "$tmp/node_modules/.bin/$bin" ]; then
        rm -rf "$dir"
        mv "$tmp" "$dir"
        touch "$dir/.complete"
      else
        rm -rf "$tmp"
        echo "install-agent-clis: FAILED to install $pkg@$version into $dir" >&2
        status=1
        continue
      fi
    fi
    echo "$name $exe"
  done
  if [ $found -eq 0 ]; then
    echo "install-agent-clis: unknown CLI '$want' (pinned: ${PINS[*]%% *})" >&2
    status=2
  fi
done
exit $status
