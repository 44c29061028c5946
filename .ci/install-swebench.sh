#!/usr/bin/env bash
# Builds the tiny SWE-bench evaluation image the SWE-bench tests run (tests/fixtures/swebench),
# FROM the local test image agentbench-test:1 (install-sandboxes.sh). Cached by tag: the tag
# carries a hash of the fixture, so a changed fixture builds anew and an unchanged one is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
FIXTURE=tests/fixtures/swebench
TAG="agentbench-swebench-tiny:$(find "$FIXTURE/Dockerfile" "$FIXTURE/repo" -type f -print0 \
  | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-12)"
if docker image inspect "$TAG" >/dev/null 2>&1; then
  echo "install-swebench: image $TAG already present (cached)"
else
  start=$(date +%s)
  docker build -q -t "$TAG" "$FIXTURE" >/dev/null
  echo "install-swebench: built $TAG in $(( $(date +%s) - start ))s"
fi
docker tag "$TAG" agentbench-swebench-tiny:1
