#!/usr/bin/env bash
# Installs what the real sandbox tests need: bubblewrap, a running Docker engine and the
# local test image agentbench-test:1 (built offline: no image registry is reachable).
# With the agent CLIs installed (install-agent-clis.sh), also agentbench-test-agents:1: the same
# image with the CLIs in it. Idempotent: skips whatever is already installed, running or built.
set -euo pipefail

IMAGE="${AGENTBENCH_TEST_IMAGE:-agentbench-test:1}"
DOCKERD_LOG="${DOCKERD_LOG:-/var/log/agentbench-dockerd.log}"
SOCKET_WAIT_S="${SOCKET_WAIT_S:-60}"
SUITE="${DEBIAN_SUITE:-bookworm}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

die() { echo "install-sandboxes: ERROR: $*" >&2; exit 1; }
say() { echo "install-sandboxes: $*"; }

SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || die "run as root or install sudo"
  SUDO="sudo"
fi

need_pkgs=()
command -v bwrap >/dev/null || need_pkgs+=(bubblewrap)
command -v dockerd >/dev/null || need_pkgs+=(docker.io)
command -v debootstrap >/dev/null || need_pkgs+=(debootstrap)
command -v ip >/dev/null || need_pkgs+=(iproute2)  # the second engine's bridge (pool tests)
if [ "${#need_pkgs[@]}" -gt 0 ]; then
  say "installing ${need_pkgs[*]}"
  $SUDO apt-get update -qq || die "apt-get update failed (is a Debian mirror reachable?)"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${need_pkgs[@]}" || die "apt-get install ${need_pkgs[*]} failed"
fi
for bin in bwrap dockerd docker debootstrap; do
  command -v "$bin" >/dev/null || die "$bin is still missing after the install"
done

bwrap --unshare-all --die-with-parent --ro-bind / / true \
  || die "bwrap is installed but cannot create namespaces here (unprivileged user namespaces off?)"
say "bubblewrap works"

if ! docker version >/dev/null 2>&1; then
  say "starting dockerd (log: $DOCKERD_LOG)"
  $SUDO sh -c "nohup dockerd >'$DOCKERD_LOG' 2>&1 &"
  for _ in $(seq 1 "$SOCKET_WAIT_S"); do
    docker version >/dev/null 2>&1 && break
    sleep 1
  done
  docker version >/dev/null 2>&1 || {
    tail -n 30 "$DOCKERD_LOG" >&2 || true
    die "dockerd did not answer within ${SOCKET_WAIT_S}s; see $DOCKERD_LOG"
  }
fi
say "docker engine answers: $(docker version --format '{{.Server.Version}}')"

build_base_image() {
rootfs="$(mktemp -d /var/tmp/agentbench-rootfs.XXXXXX)"
trap '$SUDO rm -rf "$rootfs"' EXIT
say "debootstrapping a minimal $SUITE with python3 into $rootfs"
start=$(date +%s)
$SUDO debootstrap --variant=minbase --include=python3 "$SUITE" "$rootfs" "$MIRROR" \
  >"$rootfs.log" 2>&1 || { tail -n 30 "$rootfs.log" >&2; die "debootstrap failed; see $rootfs.log"; }
$SUDO rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
# An unprivileged user for the sandboxed agent (uid 1000, home /home/agent).
$SUDO chroot "$rootfs" useradd --create-home --uid 1000 --shell /bin/sh agent
# docker import keeps no config, so CMD, PATH and the working dir are given here.
$SUDO tar -C "$rootfs" -c . | docker import \
  --change 'CMD ["/bin/sh"]' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'WORKDIR /' \
  - "$IMAGE" >/dev/null || die "docker import of the rootfs failed"
rm -f "$rootfs.log"
docker run --rm "$IMAGE" /bin/sh -c 'python3 -c "print(\"image ok\")"' \
  || die "image $IMAGE was built but cannot run /bin/sh + python3"
say "built $IMAGE in $(( $(date +%s) - start ))s"
}

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  say "image $IMAGE already present (cached)"
else
  build_base_image
fi

# A second image with the pinned agent CLIs installed in it (their native binaries, copied
# from the install cache of install-agent-clis.sh), for the tests that run a CLI from the
# image rather than mounted from the host. Rebuilt only when the pins change.
AGENT_IMAGE="${AGENTBENCH_TEST_AGENT_IMAGE:-agentbench-test-agents:1}"
PYTHON="${PYTHON:-python3}"
if ! natives="$("$PYTHON" -m pytest_agentbench.testing.clis natives 2>&1)"; then
  say "no agent image: $natives"
  exit 0
fi
pins="$("$PYTHON" -m pytest_agentbench.testing.clis pins | paste -sd ' ')"
if [ "$(docker image inspect --format '{{ index .Config.Labels "io.agentbench.pins" }}' \
        "$AGENT_IMAGE" 2>/dev/null)" = "$pins" ]; then
  say "image $AGENT_IMAGE already present (cached)"
  exit 0
fi
start=$(date +%s)
copy=""
mounts=()
while read -r name native; do
  # codex finds its helpers (rg, resources) next to its bin/ dir: copy that whole dir.
  if [ "$(basename "$(dirname "$native")")" = bin ]; then
    src="$(dirname "$(dirname "$native")")"; rel="bin/$(basename "$native")"
  else
    src="$(dirname "$native")"; rel="$(basename "$native")"
  fi
  copy+="cp -a '/src/$name' /opt/agents/$name && ln -s /opt/agents/$name/$rel /usr/local/bin/$name; "
  mounts+=(-v "$src:/src/$name:ro")
done <<<"$natives"
builder="agentbench-agent-image-build-$$"
docker rm -f "$builder" >/dev/null 2>&1 || true
docker run --name "$builder" "${mounts[@]}" "$IMAGE" /bin/sh -ec "mkdir -p /opt/agents; $copy" \
  || { docker rm -f "$builder" >/dev/null; die "copying the agent CLIs into $AGENT_IMAGE failed"; }
docker commit --change "LABEL io.agentbench.pins=\"$pins\"" "$builder" "$AGENT_IMAGE" >/dev/null \
  || { docker rm -f "$builder" >/dev/null; die "docker commit of $AGENT_IMAGE failed"; }
docker rm -f "$builder" >/dev/null
say "built $AGENT_IMAGE in $(( $(date +%s) - start ))s"
