#!/usr/bin/env bash
# Installs the pinned peer harness rerun-bench into a venv of its own at a fixed path (never
# into this project's environment): tests/test_foreign_rerun.py runs its bundled tasks, with
# its own verifiers, through this plugin. Idempotent: skips an install that is already there.
set -euo pipefail

PEER_VENV="${AGENTBENCH_PEER_VENV:-/opt/agentbench-peer/rerun-bench-0.3.0}"
PIN="rerun-bench==0.3.0"

say() { echo "install-peer: $*"; }

if "$PEER_VENV/bin/python" -c 'import rerun_bench, sys; sys.exit(rerun_bench.__version__ != "0.3.0")' 2>/dev/null; then
  say "$PIN already in $PEER_VENV"
  exit 0
fi
say "installing $PIN into $PEER_VENV"
python3 -m venv "$PEER_VENV"
"$PEER_VENV/bin/python" -m pip install --quiet "$PIN"
