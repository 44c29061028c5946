#!/usr/bin/env bash
# Creates the ordinary (non-root) user that .ci/run runs the sandbox and hostile-agent tests as,
# a second time, and lets it run this checkout's Python: the directories above the interpreter
# and above the checkout get search permission for others (o+x), nothing more. The user joins the docker group when
# there is one, as a developer or a GitHub Actions runner allowed to use Docker does.
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

USER_NAME="${AGENTBENCH_TEST_USER:-agentbench-user}"
PYTHON="${PYTHON:-python3}"

die() { echo "install-user: ERROR: $*" >&2; exit 1; }
say() { echo "install-user: $*"; }

SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || die "run as root or install sudo"
  SUDO="sudo"
fi

if ! id "$USER_NAME" >/dev/null 2>&1; then
  $SUDO useradd --create-home --shell /bin/sh "$USER_NAME" || die "useradd $USER_NAME failed"
  say "created user $USER_NAME"
fi
if getent group docker >/dev/null; then
  $SUDO usermod -aG docker "$USER_NAME"
fi

interpreter="$("$PYTHON" -c 'import os, sys; print(os.path.realpath(sys.executable))')"
prefix="$("$PYTHON" -c 'import sys; print(sys.base_prefix)')"
venv="$("$PYTHON" -c 'import sys; print(sys.prefix)')"  # the virtualenv, when PYTHON is one's
for start in "$(dirname "$interpreter")" "$prefix" "$venv" "$(pwd)"; do
  dir="$start"
  while [ "$dir" != / ]; do
    $SUDO chmod o+x "$dir"
    dir="$(dirname "$dir")"
  done
done
as_user() { if [ -z "$SUDO" ]; then runuser -u "$USER_NAME" -- "$@"; else sudo -u "$USER_NAME" -- "$@"; fi; }
as_user test -r pyproject.toml \
  || die "$USER_NAME cannot read the checkout $(pwd); check it out where others may read it"
as_user "$PYTHON" -c 'import pytest_agentbench' \
  || die "$USER_NAME cannot import pytest_agentbench with $PYTHON"
say "$USER_NAME runs $PYTHON and imports the checkout; groups: $(id -nG "$USER_NAME")"
