#!/usr/bin/env bash
# Makes the docker sandbox backend usable on a CI or dev machine. Idempotent (seconds when done):
#   1. the docker CLI and daemon (apt-get install docker.io) unless `dockerd` exists (some machine
#      images ship the CLI alone: testing for `docker` left CI without a daemon)
#   2. a running daemon: starts dockerd unless one answers (without a bridge and iptables rules:
#      sandboxes use network "none", so the host's networking stays untouched)
#   3. the image clawloop-sandbox:latest unless present with sandbox/image.py's package list
#      (REBUILD=1 forces it):
#      `clawloop sandbox build-image` = sandbox/Dockerfile with a registry, else a debootstrap rootfs
#   4. a smoke test: `clawloop sandbox run --backend docker -- echo ok`
# Exits 0 when docker sandboxes work, else prints why and exits 1; the tests then skip their
# docker cases with the reason. Runs scripts/setup.sh first when .venv or .runtime is missing;
# needs root or passwordless sudo.
set -uo pipefail
cd "$(dirname "$0")/.."
IMAGE=${CLAWLOOP_DOCKER_IMAGE:-clawloop-sandbox:latest}
CLAWLOOP=.venv/bin/clawloop
log() { echo "[docker-setup] $*"; }
fail() { echo "[docker-setup] FAILED: $*" >&2; exit 1; }
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null && sudo -n true 2>/dev/null || fail "needs root or passwordless sudo"
  SUDO=(sudo -n)
fi
if [ ! -x "$CLAWLOOP" ] || [ ! -d .runtime ]; then
  # The image build needs the CLI and the task runtime; setup.sh is idempotent, so CI running
  # it again afterwards costs seconds.
  log "running scripts/setup.sh first"
  scripts/setup.sh || fail "scripts/setup.sh failed"
fi

apt_install() {
  log "apt-get install $*"
  "${SUDO[@]}" apt-get update -qq >/dev/null 2>&1 || fail "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq "$@" >/dev/null 2>&1 \
    || fail "apt-get install $* failed"
}

# 1. CLI and daemon binaries
command -v dockerd >/dev/null || apt_install docker.io

# 2. a daemon that answers
if ! docker info >/dev/null 2>&1; then
  if "${SUDO[@]}" docker info >/dev/null 2>&1; then
    fail "dockerd runs but $(id -un) cannot use its socket: add the user to the docker group"
  fi
  command -v dockerd >/dev/null || fail "no docker daemon answers and dockerd is not installed"
  logf=/var/log/clawloop-dockerd.log
  log "starting dockerd (log: $logf)"
  "${SUDO[@]}" sh -c "nohup dockerd --bridge=none --iptables=false --ip6tables=false >$logf 2>&1 &"
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || fail "dockerd did not come up: $("${SUDO[@]}" tail -n 3 $logf 2>/dev/null | tr '\n' ' ')"
fi
log "daemon: docker $(docker version --format '{{.Server.Version}}' 2>/dev/null)"

# 3. the image, rebuilt when its apt package list (label clawloop.packages) is not sandbox/image.py's
want=$(.venv/bin/python -c 'from sandbox.image import PACKAGES; print(PACKAGES)' 2>/dev/null)
have=$(docker image inspect --format '{{index .Config.Labels "clawloop.packages"}}' "$IMAGE" 2>/dev/null)
if [ "${REBUILD:-0}" = 1 ] || ! docker image inspect "$IMAGE" >/dev/null 2>&1 || [ "$have" != "$want" ]; then
  [ -n "$have" ] && [ "$have" != "$want" ] && log "image packages changed ($have -> $want)"
  # Without a registry the image comes from debootstrap, which needs the package and root.
  command -v debootstrap >/dev/null || apt_install debootstrap
  log "building $IMAGE"
  "${SUDO[@]}" env CLAWLOOP_DOCKER_IMAGE="$IMAGE" "$CLAWLOOP" sandbox build-image --tag "$IMAGE" \
    || fail "clawloop sandbox build-image failed (see above)"
else
  log "image $IMAGE present"
fi

# 4. smoke test
out=$(CLAWLOOP_DOCKER_IMAGE="$IMAGE" "$CLAWLOOP" sandbox run --backend docker -- echo ok 2>&1) \
  || fail "smoke test failed: $out"
[ "$out" = ok ] || fail "smoke test printed: $out"
log "ready: docker sandboxes work ($IMAGE)"
